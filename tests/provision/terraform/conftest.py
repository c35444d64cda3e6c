"""A rendering of every root of cluster.yaml, shared by the structural tests of one worker."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from clusterspec.loader import load_spec
from clusterspec.spec import Cluster
from provision.terraform.commands import PRIMARY_VARIABLES
from provision.terraform.render import render
from tests.support import ROOT

DATA = ROOT / "tests/provision/terraform/data"
DESTROY_ALL = {"resource_changes": [{"address": "a.b", "change": {"actions": ["delete"]}}]}
CREATE_ONE = {"resource_changes": [{"address": "a.b", "change": {"actions": ["create"]}}]}


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return load_spec()


@pytest.fixture(scope="session")
def rendered(cluster, tmp_path_factory) -> Path:
    """``<tmp>/terraform`` with global/ and a directory per region; no AMI files (the SSM fallback)."""
    out = tmp_path_factory.mktemp("render") / "terraform"
    render(cluster, out_dir=out, ami_dir=out / "no-ami")
    return out


class FakeTerraform:
    def __init__(self, tmp_path, monkeypatch):
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        exe = bin_dir / "terraform"
        exe.write_text(f"#!{sys.executable}\n" + (DATA / "fake_terraform.py").read_text())
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        self.script_path, self.log_path = tmp_path / "script.json", tmp_path / "calls.log"
        self.log_path.write_text("")
        self.script({"plans": {"tfplan": CREATE_ONE, "destroy.tfplan": DESTROY_ALL}})
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_TF_SCRIPT", str(self.script_path))
        monkeypatch.setenv("FAKE_TF_LOG", str(self.log_path))
        for name in PRIMARY_VARIABLES:
            monkeypatch.setenv(f"TF_VAR_{name}", "arn:aws:acm:us-west-2:123456789012:certificate/x")

    def script(self, data: dict) -> None:
        self.script_path.write_text(json.dumps(data))

    @property
    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def commands(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake terraform first on PATH (tests/provision/terraform/data/fake_terraform.py), its calls logged."""
    return FakeTerraform(tmp_path, monkeypatch)
