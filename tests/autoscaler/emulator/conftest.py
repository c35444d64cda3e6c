"""An emulator on loopback over a virtual-clock model, official-client APIs pointed at it, a moto server."""

from __future__ import annotations

import pytest
from kubernetes import client, config

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures

AGENT = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {
                "containers": [
                    {"name": "agent", "image": "agent", "resources": {"requests": {"cpu": "100m"}}}
                ],
                "tolerations": [{"operator": "Exists"}],
            },
        },
    },
}


@pytest.fixture
def emu():
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), [group(desired=2)], daemonsets=[AGENT])
    with Emulator(model) as e:
        e.api.bookmark_interval_s = 0.2
        yield e


@pytest.fixture
def kubeconfig(emu, tmp_path):
    return str(emu.write_kubeconfig(tmp_path / "kubeconfig"))


@pytest.fixture
def api_client(kubeconfig):
    c = config.new_client_from_config(kubeconfig)
    yield c
    c.close()


@pytest.fixture
def core(api_client):
    return client.CoreV1Api(api_client)
