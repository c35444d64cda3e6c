"""Fixtures: a moto server (AWS) and the Kubernetes API emulator (both on loopback), for the tests not yet on the
run's shared real control plane (the ``kube`` fixture of tests/conftest.py, which these names leave unshadowed)."""

from __future__ import annotations

import pytest

from autoscaler.adapters.kubernetes import KubeCluster, api_client
from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture
def emu():
    model = ClusterModel(VirtualClock(start=START), [group(desired=2)])
    with Emulator(model) as e:
        e.api.bookmark_interval_s = 0.2
        yield e


@pytest.fixture
def kubeconfig(emu, tmp_path) -> str:
    return str(emu.write_kubeconfig(tmp_path / "kubeconfig"))


@pytest.fixture
def emu_kube(kubeconfig):
    api = api_client(kubeconfig)
    cluster = KubeCluster(api, namespace="kube-system", page_size=2, watch_timeout_s=2)
    yield cluster
    cluster.stop()
    api.close()
