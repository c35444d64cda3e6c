from __future__ import annotations

import pytest

from clusterspec.errors import UserError
from provision.packer import runner
from tests.support import ROOT, load_yaml, require_tool

CASES = load_yaml(ROOT / "tests/provision/packer/machine_readable.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["line"][:40] for c in CASES])
def test_machine_readable_lines(case):
    event = runner.Event.parse(case["line"])
    if case["kind"] is None:
        assert event is None
        return
    assert (event.target, event.kind) == (case["target"], case["kind"])
    if "message" in case:
        assert event.message == case["message"]
    if "data" in case:
        assert event.data == case["data"]


def test_missing_packer_is_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError) as err:
        runner.packer_path()
    assert len(err.value.lines) == 1 and "make tools" in err.value.lines[0]


@pytest.mark.tool
def test_version_comes_through_packer_py():
    exe = require_tool("packer")
    version = runner.packer_version(exe)
    assert len(version) == 3 and version >= (1, 6, 0)


@pytest.mark.tool
def test_a_failing_build_reports_packers_problem(tmp_path):
    from clusterspec.loader import load_spec
    from provision.packer import bake, template
    from provision.packer.variables import packer_variables, write_var_file

    exe = require_tool("packer")
    staged = template.stage(tmp_path / "template", with_plugins=False)
    values = packer_variables(load_spec(), "us-west-2") | {"ami_name": "x"}
    var_file = write_var_file(values, tmp_path / "v.pkrvars.json")
    seen = []
    result = runner.build(staged, var_file, bake.LOCAL_BUILD, executable=exe, on_event=seen.append)
    assert result.returncode != 0 and not result.amis
    assert bake._first_problem(result.errors) == "ami_name must be between 3 and 128 characters long"
    assert any(e.kind == "ui" for e in seen)


def test_packer_that_cannot_start_is_reported(tmp_path):
    result = runner.build(tmp_path, tmp_path / "v.json", "x", executable=str(tmp_path / "no-packer"))
    assert result.returncode == -1 and result.errors[0].startswith(f"cannot run {tmp_path / 'no-packer'}")
