"""An emulator serving the researcher's kinds over the spec's node groups, and a kubeconfig for it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from autoscaler.model.spec_groups import groups_from_spec
from clusterspec.loader import DEFAULT_SPEC

SPEC_DATA = yaml.safe_load(Path(DEFAULT_SPEC).read_text())


@pytest.fixture
def emu():
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), groups_from_spec(SPEC_DATA))
    with Emulator(model) as e:
        e.install_podgroup_crd()  # `invoke deploy-scheduler` applies it on a real cluster
        yield e


@pytest.fixture
def kubeconfig(emu, tmp_path: Path) -> str:
    emu.create_namespace("u-alice")  # `invoke add-user alice` creates it
    path = emu.write_kubeconfig(tmp_path / "kubeconfig")
    data = yaml.safe_load(path.read_text())
    for ctx in data["contexts"]:
        ctx["context"]["namespace"] = "u-alice"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "resnet"
    root.mkdir()
    (root / "train.py").write_text("print('hello')\n")
    (root / "requirements.txt").write_text("torch\n")
    return root


@pytest.fixture
def lab_env(monkeypatch, tmp_path: Path, kubeconfig: str):
    monkeypatch.setenv("LAB_ENGINE", "")  # no container engine: write the context, build nothing
    monkeypatch.setenv("LAB_USER", "alice")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LAB_REGISTRY", "123456789012.dkr.ecr.us-west-2.amazonaws.com")
    monkeypatch.delenv("LAB_SPEC", raising=False)
    return kubeconfig
