"""The cluster as a baseline policy sees it, read through the two interfaces (``interfaces.Cluster``/``Cloud``).

Baselines only use what a real cluster would offer them: pods, nodes and the cloud's groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
