"""ResourceQuota and LimitRange admission as kube-apiserver's plugins (plugin/pkg/admission/resourcequota,
limitranger) apply them, held to kubectl: a pod beyond a namespace's GPU quota is refused with the API server's
message and the quota's status counts what is used; a quota on CPU makes every container state it; a LimitRange
defaults containers and refuses one above its maximum."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group

KUBECTL = "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")


@pytest.fixture
def kubectl(tmp_path):
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), [group(desired=2)])
    with Emulator(model, namespaces=("team",)) as emu:
        kc = str(emu.write_kubeconfig(tmp_path / "admin", namespace="team"))

        def run(*args, input=None, check=True):
            out = subprocess.run([KUBECTL, "--kubeconfig", kc, *args], capture_output=True, text=True, input=input,
                                 timeout=60)  # fmt: skip
            if check:
                assert out.returncode == 0, out.stderr
            return out

        yield run


def _pod(name, gpus=None, cpu=None, limits_cpu=None):
    res: dict = {}
    if gpus:
        res.setdefault("requests", {})["nvidia.com/gpu"] = str(gpus)
        res.setdefault("limits", {})["nvidia.com/gpu"] = str(gpus)
    if cpu:
        res.setdefault("requests", {})["cpu"] = cpu
    if limits_cpu:
        res.setdefault("limits", {})["cpu"] = limits_cpu
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                                    "containers": [{"name": "main", "image": "busybox:1.36", "resources": res}]}})  # fmt: skip


def test_a_pod_beyond_the_gpu_quota_is_refused_and_the_status_counts_what_is_used(kubectl) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "ResourceQuota",
                                                       "metadata": {"name": "gpus"},
                                                       "spec": {"hard": {"requests.nvidia.com/gpu": "8"}}}))  # fmt: skip
    kubectl("apply", "-f", "-", input=_pod("a", gpus=8))
    out = kubectl("apply", "-f", "-", input=_pod("b", gpus=1), check=False)
    assert out.returncode == 1
    assert (
        'pods "b" is forbidden: exceeded quota: gpus, requested: requests.nvidia.com/gpu=1, used: '
        "requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8"
    ) in out.stderr
    status = json.loads(kubectl("get", "resourcequota", "gpus", "-o", "json").stdout)["status"]
    assert status == {"hard": {"requests.nvidia.com/gpu": "8"}, "used": {"requests.nvidia.com/gpu": "8"}}


def test_a_cpu_quota_makes_every_container_state_its_cpu(kubectl) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "ResourceQuota",
                                                       "metadata": {"name": "cpu"},
                                                       "spec": {"hard": {"limits.cpu": "4"}}}))  # fmt: skip
    out = kubectl("apply", "-f", "-", input=_pod("c", cpu="1"), check=False)
    assert 'pods "c" is forbidden: failed quota: cpu: must specify limits.cpu for: main' in out.stderr


def test_a_limit_range_defaults_containers_and_refuses_one_above_its_maximum(kubectl) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "LimitRange",
                                                       "metadata": {"name": "limits"},
                                                       "spec": {"limits": [{"type": "Container",
                                                                            "default": {"cpu": "500m"},
                                                                            "defaultRequest": {"cpu": "250m"},
                                                                            "max": {"cpu": "2"}}]}}))  # fmt: skip
    kubectl("apply", "-f", "-", input=_pod("d"))
    pod = json.loads(kubectl("get", "pod", "d", "-o", "json").stdout)
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m"},
        "requests": {"cpu": "250m"},
    }
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"].startswith(
        "LimitRanger plugin set: cpu request"
    )
    out = kubectl("apply", "-f", "-", input=_pod("e", cpu="1", limits_cpu="4"), check=False)
    assert 'pods "e" is forbidden: maximum cpu usage per Container is 2, but limit is 4' in out.stderr
