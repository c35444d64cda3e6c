"""The cross-resource rules of `invoke check-terraform` (provision/terraform/seams.py): zero problems on every
module and rendered root, and each broken fixture (data/seam_cases.yaml) caught with the right file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.terraform import seams
from provision.terraform.schema_check import Checker
from provision.terraform.settings import MODULES
from tests.provision.terraform.conftest import DATA
from tests.support import ROOT, load_yaml

CASES = load_yaml(DATA / "seam_cases.yaml")


def test_every_module_and_rendered_root_passes(rendered):
    roots = sorted(p for p in rendered.iterdir() if p.is_dir() and list(p.glob("*.tf")))
    problems, counts = seams.check(Checker({}, ROOT), MODULES, roots, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))
    # every rule looked at something: the seams exist in this tree
    assert all(n > 0 for n in counts.rules.values()), counts.rules


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_broken_fixture_is_caught(tmp_path, case, monkeypatch):
    for name, text in case["files"].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "modules").mkdir(exist_ok=True)
    calls = "calls" in case
    if calls:
        table = tmp_path / "api_calls.yaml"
        table.write_text(yaml.safe_dump(case["calls"]))
        from provision.terraform import api_calls

        monkeypatch.setattr(api_calls, "TABLE", table)
        real = api_calls.check
        monkeypatch.setattr(api_calls, "check", lambda *a, **k: real(*a, **k, table=table))
    problems, _counts = seams.check(
        Checker({}, tmp_path), tmp_path / "modules", [tmp_path / "root"], tmp_path, calls
    )
    unmatched = list(problems)
    for want in case["expect"]:
        hit = next((p for p in unmatched if p.path == want["file"] and p.line == want["line"]
                    and want["contains"] in str(p)), None)  # fmt: skip
        assert hit, f"{case['name']}: expected {want}; got\n" + "\n".join(map(str, problems))
        unmatched.remove(hit)
    assert not unmatched, f"{case['name']}: unexpected\n" + "\n".join(map(str, unmatched))


def test_the_task_prints_the_cross_resource_counts(cluster, tmp_path, capsys):
    from provision.terraform.mirror import check_schema
    from provision.terraform.schema_check import run

    path, _ = check_schema()
    if not path.is_file():
        pytest.skip("the provider schema is missing (run `make tools`)")
    assert run(cluster, tmp_path, MODULES, path, ROOT) == []
    out = capsys.readouterr().out
    assert "0 cross-resource problems; checked: root volumes" in out and "API calls" in out


def test_the_image_size_has_one_source():
    from clusterspec.loader import load_spec
    from clusterspec.names import IMAGE_ROOT_GIB
    from provision.packer.variables import packer_variables

    assert packer_variables(load_spec(), "us-west-2")["root_volume_gib"] == IMAGE_ROOT_GIB
    assert (
        Path(ROOT / "packer/gpu-worker.pkr.hcl")
        .read_text()
        .count("volume_size           = var.root_volume_gib")
        == 1
    )
