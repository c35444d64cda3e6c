"""A scripted cluster and cloud for pinning baseline behaviour step by step (no model, no timing in between).

Groups, nodes and pods are the dicts the interfaces return; the test moves the clock and edits them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from clusterspec.loader import load_spec
from clusterspec.names import NODE_GROUP_LABEL
from simulator.policies.base import PolicyContext

GPU = "nvidia.com/gpu"
TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
V100_WEST = "dlr-us-west-2-gpu-v100x8"
V100_EAST = "dlr-us-east-1-gpu-v100x8"
T4_WEST = "dlr-us-west-2-gpu-t4"
ALLOC8 = {"cpu": "63", "memory": "480Gi", "pods": "110", GPU: "8"}
ALLOC1 = {"cpu": "3.5", "memory": "14Gi", "pods": "29", GPU: "1"}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


def group(name: str, desired: int = 0, gpus: int = 8, max: int = 10, min: int = 0) -> dict:
    region = name.split("-gpu")[0].removeprefix("dlr-")
    return {
        "name": name,
        "region": region,
        "zones": [f"{region}a"],
        "instance_type": "p3.16xlarge" if gpus == 8 else "g4dn.xlarge",
        "min": min,
        "max": max,
        "desired": desired,
        "labels": {NODE_GROUP_LABEL: name},
        "taints": [dict(TAINT)],
        "allocatable": dict(ALLOC8 if gpus == 8 else ALLOC1),
        "priority": 10,
        "instances": [],
    }


def node(
    name: str,
    group_name: str,
    instance: str,
    gpus: int = 8,
    ready: bool = True,
    advertised: bool = True,
    created: float | None = None,
) -> dict:
    """A registered node; ``ready=False``: NotReady with the not-ready taint (as kubelet registers), and
    ``advertised=False``: its GPUs not in allocatable yet (the device plugin is starting)."""
    alloc = dict(ALLOC8 if gpus == 8 else ALLOC1)
    if not advertised:
        alloc.pop(GPU)
    taints = [dict(TAINT)]
    if not ready:
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    return {
        "metadata": {
            "name": name,
            "labels": {NODE_GROUP_LABEL: group_name},
            **({"creationTimestamp": iso(created)} if created is not None else {}),
        },
        "spec": {"providerID": f"aws:///us-west-2a/{instance}", "taints": taints},
        "status": {
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    gpus: int,
    node_name: str | None = None,
    annotations: dict | None = None,
    created: float | None = None,
) -> dict:
    """A Job's pod; without ``created`` it has no creationTimestamp (it counts as old)."""
    return {
        "metadata": {
            "name": name,
            "namespace": "research",
            "annotations": dict(annotations or {}),
            "ownerReferences": [{"kind": "Job", "name": name, "controller": True}],
            **({"creationTimestamp": iso(created)} if created is not None else {}),
        },  # fmt: skip
        "spec": {
            **({"nodeName": node_name} if node_name else {}),
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}}}
            ],
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


class FakeCluster:
    def __init__(self) -> None:
        self.pods: list[dict] = []
        self.nodes: list[dict] = []
        self.evicted: list[tuple[float, str]] = []
        self.now = 0.0

    def list_pods(self) -> list[dict]:
        return copy.deepcopy(self.pods)

    def list_nodes(self) -> list[dict]:
        return copy.deepcopy(self.nodes)

    def taint_node(self, name: str, taint: dict) -> None:
        pass

    def evict_pod(self, namespace: str, name: str) -> bool:
        self.evicted.append((self.now, name))
        return True


class FakeCloud:
    def __init__(self, *groups: dict) -> None:
        self.groups = {g["name"]: g for g in groups}
        self.calls: list[tuple] = []
        self.failures: list[dict] = []
        self.now = 0.0
        self.reads: list[tuple[float, tuple | None]] = []  # (time, regions asked for) of each list_groups

    def list_groups(self, regions=None) -> list[dict]:
        self.reads.append((self.now, None if regions is None else tuple(regions)))
        groups = [g for g in self.groups.values() if regions is None or g["region"] in regions]
        return copy.deepcopy(groups)

    def set_desired(self, name: str, desired: int) -> None:
        self.calls.append((self.now, "set_desired", name, desired))
        self.groups[name]["desired"] = desired

    def terminate_instance(self, name: str, instance_id: str) -> None:
        self.calls.append((self.now, "terminate", name, instance_id))
        g = self.groups[name]
        g["instances"] = [i for i in g["instances"] if i["id"] != instance_id]
        g["desired"] -= 1

    def scaling_failures(self, since: datetime) -> list[dict]:
        return [f for f in self.failures if f["at"] >= since.timestamp()]

    def protect(self, group: str, changed: int) -> None:
        self.calls.append((self.now, "protect", group, changed))


class Harness:
    """A policy over the fakes; ``at(t)`` runs one loop at time t."""

    def __init__(self, make, *groups: dict) -> None:
        self.cluster = FakeCluster()
        self.cloud = FakeCloud(*groups)
        self.t = 0.0
        ctx = PolicyContext(
            cluster=self.cluster,
            cloud=self.cloud,
            clock=lambda: datetime.fromtimestamp(self.t, UTC),
            spec=load_spec(),
            jobs=[],
            scan_interval_s=10.0,
        )
        self.policy = make(ctx)

    def at(self, t: float) -> list[tuple]:
        self.t = self.cluster.now = self.cloud.now = t
        before = len(self.cloud.calls)
        self.policy.run_once()
        return self.cloud.calls[before:]
