"""The cluster as a baseline policy sees it, read through the two interfaces (``interfaces.Cluster``/``Cloud``).

Baselines only use what a real cluster would offer them: pods, nodes and the cloud's groups.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from kubernetes.utils import parse_quantity

from autoscaler.interfaces import Cloud, Cluster
from clusterspec.names import NODE_GROUP_LABEL

GPU = "nvidia.com/gpu"


@lru_cache(maxsize=4096)
def quantity(text: str) -> float:
    return float(parse_quantity(text))


def requests(pod: dict) -> dict[str, float]:
    """The pod's requests (containers summed, at least its largest init container, plus overhead) and one pod
    slot; CPU in cores, memory in bytes."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or ():
        for r, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[r] = total.get(r, 0.0) + quantity(str(q))
    for c in spec.get("initContainers") or ():
        for r, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[r] = max(total.get(r, 0.0), quantity(str(q)))
    for r, q in (spec.get("overhead") or {}).items():
        total[r] = total.get(r, 0.0) + quantity(str(q))
    total["pods"] = 1.0
    return total


def created_at(obj: dict) -> float:
    """``metadata.creationTimestamp`` as POSIX seconds; an object without one counts as old (-inf), as Go's zero
    time does."""
    text = (obj.get("metadata") or {}).get("creationTimestamp")
    if not text:
        return float("-inf")
    return _timestamp(text)


@lru_cache(maxsize=65536)
def _timestamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def pod_gpus(pod: dict) -> int:
    return int(requests(pod).get(GPU, 0.0))


def allocatable(obj: dict) -> dict[str, float]:
    """A node's (``status.allocatable``) or a group's (``allocatable``) capacity as numbers."""
    alloc = obj.get("status", {}).get("allocatable") if "status" in obj else obj.get("allocatable")
    return {r: quantity(str(q)) for r, q in (alloc or {}).items()}


def is_daemonset_pod(pod: dict) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in pod.get("metadata", {}).get("ownerReferences") or [])


def is_pending(pod: dict) -> bool:
    return pod.get("status", {}).get("phase") == "Pending" and not pod.get("spec", {}).get("nodeName")


def is_active(pod: dict) -> bool:
    return pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


NOT_READY_TAINTS = (
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
)


def node_ready(node: dict) -> bool:
    """Ready as cluster-autoscaler reads it (utils/kubernetes/ready.go ``GetNodeReadiness``): the Ready condition
    True, no DiskPressure or NetworkUnavailable condition, none of the not-ready taints."""
    status = node.get("status") or {}
    ready = False
    for cond in status.get("conditions") or ():
        kind, value = cond.get("type"), cond.get("status")
        if kind == "Ready":
            ready = value == "True"
        elif kind in ("DiskPressure", "NetworkUnavailable") and value == "True":
            return False
    if any(t.get("key") in NOT_READY_TAINTS for t in (node.get("spec") or {}).get("taints") or ()):
        return False
    return ready


def node_gpus(node: dict) -> int:
    return int(quantity(str(node.get("status", {}).get("allocatable", {}).get(GPU, "0"))))


def group_gpus(group: dict) -> int:
    return int(quantity(str(group.get("allocatable", {}).get(GPU, "0"))))


@dataclass
class ClusterView:
    pods: list[dict]
    nodes: list[dict]
    groups: list[dict]
    by_name: dict[str, dict] = field(default_factory=dict)
    pods_on: dict[str, list[dict]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {g["name"]: g for g in self.groups}
        self.pods_on = {n["metadata"]["name"]: [] for n in self.nodes}
        for p in self.pods:
            node = p.get("spec", {}).get("nodeName")
            if node in self.pods_on and is_active(p):
                self.pods_on[node].append(p)

    @classmethod
    def read(cls, cluster: Cluster, cloud: Cloud) -> ClusterView:
        return cls(cluster.list_pods(), cluster.list_nodes(), cloud.list_groups())

    def pending(self) -> list[dict]:
        return [p for p in self.pods if is_pending(p) and not is_daemonset_pod(p)]

    def demand_gpus(self) -> int:
        return sum(pod_gpus(p) for p in self.pods if is_active(p))

    def node_group(self, node: dict) -> str | None:
        return node.get("metadata", {}).get("labels", {}).get(NODE_GROUP_LABEL)

    def nodes_of(self, group: str) -> list[dict]:
        return [n for n in self.nodes if self.node_group(n) == group]

    def registered(self, group: str) -> int:
        return len(self.nodes_of(group))

    def requested_gpus(self) -> int:
        """GPUs of the capacity requested from the cloud: each group's desired size times its GPUs per node."""
        return sum(g["desired"] * group_gpus(g) for g in self.groups)


def instance_id_of(node: dict) -> str | None:
    """The instance id from the node's providerID ``aws:///<zone>/<instance-id>``."""
    pid = node.get("spec", {}).get("providerID") or ""
    return pid.rsplit("/", 1)[-1] or None if pid else None


class RegionCloud:
    """``interfaces.Cloud`` as one cluster-autoscaler process sees it: the groups of its regions only (None:
    every region). Its reads are asked for those regions, so the API calls are counted where its clients make
    them (``simulator/api_calls.py``)."""

    def __init__(self, cloud, regions: Collection[str] | None) -> None:
        self.cloud = cloud
        self.regions = None if regions is None else tuple(regions)
        self._names: set[str] = set()

    def list_groups(self) -> list[dict]:
        groups = self.cloud.list_groups(regions=self.regions)
        if self.regions is not None:
            groups = [g for g in groups if g["region"] in self.regions]
        self._names = {g["name"] for g in groups}
        return groups

    def set_desired(self, group: str, desired: int) -> None:
        self.cloud.set_desired(group, desired)

    def terminate_instance(self, group: str, instance_id: str) -> None:
        self.cloud.terminate_instance(group, instance_id)

    def scaling_failures(self, since: datetime) -> list[dict]:
        failures = self.cloud.scaling_failures(since)
        return failures if self.regions is None else [f for f in failures if f["group"] in self._names]
