from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from clusterspec.errors import SpecError
from clusterspec.loader import load_spec, parse_yaml, spec_from_data
from tests.support import ROOT, example_spec_data, load_yaml, set_path

CASES = load_yaml(ROOT / "tests/clusterspec/bad_specs.yaml")


def test_example_spec_is_valid():
    cluster = load_spec()
    assert cluster.primary_region == "us-west-2"
    assert cluster.spill_over_order == ["us-west-2", "us-east-1", "us-east-2"]
    assert cluster.asg_name("us-east-1", "gpu-v100x8") == "dlr-us-east-1-gpu-v100x8"
    assert cluster.region("us-east-1").node_groups[2].gpus == 8


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_spec_gives_one_clear_line(case):
    data = example_spec_data()
    for path, value in case["set"].items():
        set_path(data, path, value)
    with pytest.raises(SpecError) as err:
        spec_from_data(data, "cluster.yaml")
    matching = [line for line in err.value.lines if case["expect"] in line]
    assert matching, f"no line contains {case['expect']!r}; got:\n" + "\n".join(err.value.lines)
    assert all(line.startswith("cluster.yaml: ") and "\n" not in line for line in err.value.lines)


def test_yaml_syntax_error_has_line_and_column():
    with pytest.raises(SpecError) as err:
        parse_yaml("name: a\nregions: [\n  {name: x\n", "cluster.yaml")
    assert err.value.lines[0].startswith("cluster.yaml:4:1: YAML syntax error")


def test_duplicate_yaml_key_is_rejected():
    with pytest.raises(SpecError) as err:
        parse_yaml("name: a\nname: b\n", "c.yaml")
    assert err.value.lines == ["c.yaml:2:1: YAML syntax error: duplicate key 'name'"]


def test_missing_file():
    with pytest.raises(SpecError, match="cannot read the cluster spec"):
        load_spec("/nonexistent/cluster.yaml")


def _invoke(*args):
    return subprocess.run(
        [sys.executable, "-m", "invoke", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_invoke_validate_exit_codes(tmp_path):
    ok = _invoke("validate")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("ok: cluster dlr")
    data = example_spec_data()
    data["regions"][1]["cidr"] = "10.0.0.0/16"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    res = _invoke("validate", "--spec", str(bad))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"{bad}: regions[1].cidr 10.0.0.0/16 overlaps regions[0].cidr 10.0.0.0/16 (us-west-2)"
    ]


def test_invoke_plan_addresses_prints_every_network():
    res = _invoke("plan-addresses")
    assert res.returncode == 0, res.stderr
    for cidr in ("10.0.0.0/19", "10.1.236.0/22", "10.16.0.0/20", "10.20.0.0/22", "10.128.0.0/14"):
        assert cidr in res.stdout
