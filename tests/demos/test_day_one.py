"""The demos' day one (demos/day_one.py) on an in-process emulator set up as the demos start it (a kubeadm
control-plane node, no built-in device plugins): what `invoke up` deploys applies with kubectl, the gang scheduler
comes up and serves its profile, the autoscaler's Deployment (issue 23's, restricted) becomes available and its
ServiceAccount's token is authorized by the applied RBAC only; the Deployment before issue 23 (pinned) fails the
demo with the API server's message."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from autoscaler.demo.run import DemoFailed
from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock, groups_from_spec
from autoscaler.model.boot import NodeLifecycle
from clusterspec.loader import DEFAULT_SPEC, load_spec
from demos import day_one
from tests.support import load_yaml

KUBECTL = "/usr/bin/kubectl"
PINNED = (
    Path(__file__).parent.parent
    / "autoscaler"
    / "emulator"
    / "fixtures"
    / "autoscaler-manifests-acb6d0c.yaml"
)
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")


@pytest.fixture
def bare(tmp_path, monkeypatch):

    groups = [g for g in groups_from_spec(load_yaml(Path(DEFAULT_SPEC))) if g["min"] > 0]
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), groups,
                         lifecycle=NodeLifecycle(device_plugins=False, cloud_controller=False))  # fmt: skip
    with model.lock:
        model.register_control_plane("ip-10-0-0-10.us-west-2.compute.internal", "10.0.0.10", "us-west-2",
                                     "us-west-2a", {"cpu": "4", "memory": "16Gi", "pods": "110"})  # fmt: skip
    monkeypatch.setenv("PATH", f"{Path(KUBECTL).parent}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv(
        "KUBECONFIG", str(tmp_path / "admin.kubeconfig")
    )  # day_one points kubectl at the admin's
    with Emulator(model, namespaces=()) as emu:
        yield emu, emu.write_kubeconfig(tmp_path / "admin.kubeconfig"), tmp_path


def test_what_invoke_up_deploys_comes_up_and_the_autoscaler_runs_as_its_service_account(bare) -> None:
    emu, admin, out = bare
    warnings = day_one.apply_all(load_spec(None), admin, out / "deploy", say=lambda _: None)
    assert not [w for w in warnings if "PodSecurity" in w], warnings
    deployment = day_one.wait_for_autoscaler(admin, timeout_s=10)
    assert deployment["status"]["availableReplicas"] >= 1
    with emu.model.lock:
        assert emu.model.scheduler.schedulers.get("research-gang-scheduler") is True, (
            "its pod runs its Coscheduling profile"
        )
    kc = day_one.service_account_kubeconfig(admin, out / "sa.kubeconfig")

    def as_sa(*args):
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(kc), *args], capture_output=True, text=True, timeout=30
        )

    assert as_sa("auth", "can-i", "patch", "nodes").stdout.strip() == "yes"
    assert as_sa("auth", "can-i", "create", "pods", "--subresource=eviction").stdout.strip() == "yes"
    assert as_sa("auth", "can-i", "delete", "pods").stdout.strip() == "no", (
        "least privilege: evictions, not deletes"
    )
    refused = as_sa("get", "secrets", "-n", "kube-system")
    assert (
        'User "system:serviceaccount:research-autoscaler:research-autoscaler" cannot list resource "secrets"'
        in refused.stderr
    )


def test_the_deployment_before_issue_23_fails_the_demo_with_the_api_servers_message(bare) -> None:
    emu, admin, out = bare
    done = subprocess.run([KUBECTL, "--kubeconfig", str(admin), "apply", "-f", str(PINNED)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with pytest.raises(DemoFailed) as e:
        day_one.wait_for_autoscaler(admin, timeout_s=10)
    message = str(e.value)
    assert message.startswith("the cluster refused the autoscaler's Deployment: pods \"research-autoscaler-")
    assert message.endswith('is forbidden: violates PodSecurity "restricted:latest": host namespaces '
                            '(hostNetwork=true), hostPort (container "autoscaler" uses hostPort 8085)')  # fmt: skip
    rs = json.loads(subprocess.run([KUBECTL, "--kubeconfig", str(admin), "get", "rs", "-n", "research-autoscaler", "-o",
                                    "json"], capture_output=True, text=True).stdout)["items"]  # fmt: skip
    assert rs and rs[0]["status"].get("replicas", 0) == 0
