from __future__ import annotations

import json

import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision.chef.attributes import node_attributes
from tests.provision.chef.support import HERE, outputs_copy, set_path, write_lock, write_outputs
from tests.support import load_yaml

CASES = load_yaml(HERE / "bad_outputs.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_broken_outputs_give_one_clear_line(case, tmp_path):
    docs = outputs_copy()
    directory = write_outputs(tmp_path, docs)
    target = directory / case["region"] / "outputs.json"
    if case["set"] == "__missing_file__":
        target.unlink()
    elif case["set"] == "__not_json__":
        target.write_text("Error: no state\n")
    else:
        doc = docs[case["region"]]
        for path, value in case["set"].items():
            set_path(doc, path, value)
        target.write_text(json.dumps(doc))
    with pytest.raises(UserError) as err:
        node_attributes(load_spec(), "lab", directory, ami_dir=write_lock(tmp_path / "ami").parent)
    assert len(err.value.lines) == 1 and "\n" not in err.value.lines[0]
    assert case["expect"] in err.value.lines[0]
    assert err.value.lines[0].startswith(str(target))


def test_missing_api_endpoint_falls_back_to_the_private_dns_name(tmp_path):
    docs = outputs_copy()
    del docs["us-west-2"]["api_endpoint"]
    write_lock(tmp_path / "ami")
    attrs = node_attributes(load_spec(), "lab", write_outputs(tmp_path, docs), ami_dir=tmp_path / "ami")
    attrs = attrs["cluster_node"]
    assert attrs["kubernetes"]["api_endpoint"] == "api.research.internal:6443"


def test_placeholders_need_no_outputs_and_say_so(tmp_path):
    attrs = node_attributes(load_spec(), "lab", tmp_path / "none", placeholders=True)["cluster_node"]
    assert attrs["placeholders"] is True
    assert all(t["outside_ip"].startswith("203.0.113.") for t in attrs["vpn"]["tunnels"])
