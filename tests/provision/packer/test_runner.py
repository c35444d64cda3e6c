from __future__ import annotations

import pytest
import yaml

from provision.errors import UserError
from provision.packer import runner
from tests.support import ROOT, require_tool

CASES = yaml.safe_load((ROOT / "tests/provision/packer/machine_readable.yaml").read_text())


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
