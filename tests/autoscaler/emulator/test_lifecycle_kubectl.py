"""The node lifecycle (autoscaler/model/boot.py) as the real kubectl shows it: get nodes NotReady then Ready,
describe node with the taints and conditions a real booting node has."""

from __future__ import annotations

import subprocess

import pytest

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.support import require_tool

pytestmark = pytest.mark.tool
T0 = 1_767_225_600.0


@pytest.fixture
def booting(tmp_path):
    exe = require_tool("kubectl")
    model = ClusterModel(VirtualClock(start=T0), [group()], boot_delays={"p3": 100})
    with Emulator(model) as emu:
        kubeconfig = str(emu.write_kubeconfig(tmp_path / "kubeconfig"))

        def kubectl(*args: str) -> str:
            proc = subprocess.run(
                [exe, "--kubeconfig", kubeconfig, "--request-timeout=10s", *args],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 0, proc.stderr
            return proc.stdout

        with model.lock:
            model.cloud.set_desired("g8", 1)
            model.advance(T0 + 100)
            name = model.nodes()[0]["metadata"]["name"]
        yield emu, kubectl, name


def _status(kubectl, name: str) -> str:
    (line,) = [row for row in kubectl("get", "nodes").splitlines()[1:] if row.startswith(name)]
    return line.split()[1]


def test_get_nodes_shows_not_ready_then_ready(booting):
    emu, kubectl, name = booting
    assert _status(kubectl, name) == "NotReady"
    with emu.model.lock:
        emu.model.advance(T0 + 120)
    assert _status(kubectl, name) == "Ready"


def test_the_device_plugin_pod_is_container_creating_until_the_node_is_ready(booting):
    emu, kubectl, name = booting
    on_node = ("get", "pods", "-n", "kube-system", f"--field-selector=spec.nodeName={name}")
    (row,) = kubectl(*on_node).splitlines()[1:]
    assert row.startswith("nvidia-device-plugin-daemonset-") and row.split()[1:3] == [
        "0/1",
        "ContainerCreating",
    ]
    with emu.model.lock:
        emu.model.advance(T0 + 120)
    (row,) = kubectl(*on_node).splitlines()[1:]
    assert row.split()[1:3] == ["1/1", "Running"]


def test_describe_node_shows_the_lifecycle_taints_conditions_and_gpus(booting):
    emu, kubectl, name = booting
    out = kubectl("describe", "node", name)
    assert f"HolderIdentity:  {name}" in out, "the kubelet's Lease in kube-node-lease"
    assert "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule" in out
    assert "node.kubernetes.io/not-ready:NoSchedule" in out
    assert "nvidia.com/gpu=present:NoSchedule" in out
    ready = next(line for line in out.splitlines() if line.strip().startswith("Ready "))
    assert "False" in ready and "KubeletNotReady" in ready and "NetworkPluginNotReady" in ready
    assert "nvidia.com/gpu" not in out.split("Allocatable:")[1].split("System Info:")[0]
    with emu.model.lock:
        emu.model.advance(T0 + 150)
    out = kubectl("describe", "node", name)
    taints = out.split("Taints:")[1].split("Unschedulable:")[0]
    assert "not-ready" not in taints and "uninitialized" not in taints
    assert "KubeletReady" in out
    allocatable = out.split("Allocatable:")[1].split("System Info:")[0]
    assert "nvidia.com/gpu:     8" in allocatable


def test_describe_node_shows_an_unreachable_node(booting):
    emu, kubectl, name = booting
    with emu.model.lock:
        emu.model.advance(T0 + 150)
        emu.model.stop_heartbeat(name)
        emu.model.advance(T0 + 200)
    assert _status(kubectl, name) == "NotReady"  # kubectl prints Unknown Ready as NotReady
    out = kubectl("describe", "node", name)
    assert (
        "node.kubernetes.io/unreachable:NoExecute" in out
        and "node.kubernetes.io/unreachable:NoSchedule" in out
    )
    assert "NodeStatusUnknown" in out and "Kubelet stopped posting node status." in out
