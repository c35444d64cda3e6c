"""In-process implementations of ``autoscaler.interfaces.Cluster`` and ``Cloud`` over a ClusterModel.

Both count their calls per method (``ModelCluster.calls``; ``ModelCloud.calls`` is ``model.cloud.api_calls``),
as the simulator reports cloud API usage per policy. Lists hand out the model's live objects: treat them as read-only.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from simulator.model.cluster_model import ClusterModel


class ModelCluster:
    """The Kubernetes side of a ClusterModel (autoscaler.interfaces.Cluster)."""

    def __init__(self, model: ClusterModel) -> None:
        self.model = model
        self.calls: Counter[str] = Counter()

    def _count(self, name: str) -> None:
        self.calls[name] += 1

    def list_pods(self) -> list[dict]:
        self._count("list_pods")
        return self.model.pods()

    def list_nodes(self) -> list[dict]:
        self._count("list_nodes")
        return self.model.nodes()

    def list_pdbs(self) -> list[dict]:
        self._count("list_pdbs")
        return self.model.pdbs()

    def taint_node(self, name: str, taint: dict) -> None:
        self._count("taint_node")
        self.model.taint_node(name, taint)

    def untaint_node(self, name: str, key: str) -> None:
        self._count("untaint_node")
        self.model.untaint_node(name, key)

    def annotate_node(self, name: str, annotations: dict[str, str | None]) -> None:
        self._count("annotate_node")
        self.model.annotate_node(name, annotations)

    def evict_pod(self, namespace: str, name: str) -> bool:
        self._count("evict_pod")
        return self.model.evict_pod(namespace, name)

    def delete_node(self, name: str) -> None:
        """Idempotent, as the Kubernetes adapter is (a 404 is success): the node may be gone already."""
        self._count("delete_node")
        if self.model.store.find("nodes", None, name) is not None:
            self.model.delete_node(name)

    def record_event(self, pod: dict, reason: str, message: str, type: str = "Normal") -> None:
        self._count("record_event")
        self.model.record_event(pod, reason, message, type)

    def read_state(self) -> dict[str, str]:
        self._count("read_state")
        return self.model.read_state()

    def write_state(self, data: dict[str, str]) -> None:
        self._count("write_state")
        self.model.write_state(data)


class ModelCloud:
    """The cloud side of a ClusterModel (autoscaler.interfaces.Cloud); calls counted in ``model.cloud.api_calls``."""

    def __init__(self, model: ClusterModel) -> None:
        self.model = model

    @property
    def calls(self) -> Counter[str]:
        return self.model.cloud.api_calls

    def list_groups(self) -> list[dict]:
        return self.model.cloud.list_groups()

    def set_desired(self, group: str, desired: int) -> None:
        self.model.cloud.set_desired(group, desired)

    def terminate_instance(self, group: str, instance_id: str) -> None:
        self.model.cloud.terminate_instance(group, instance_id)

    def scaling_failures(self, since: datetime) -> list[dict]:
        return self.model.cloud.scaling_failures(since)
