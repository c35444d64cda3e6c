"""The two small interfaces behind which all of the autoscaler's I/O lives.

The decision core (``autoscaler.core``) is pure: a snapshot in, a plan out, time passed in. The controller
(``autoscaler.controller``) builds the snapshot from a :class:`Cluster` and a :class:`Cloud`, asks the core for
a plan and carries it out through the same two interfaces. The live adapters (Kubernetes API, boto3), the
cluster model used by the simulator and the tests all implement them.

Objects cross these interfaces as plain JSON-shaped dicts: Kubernetes objects exactly as ``kubectl get -o json``
prints them (camelCase keys), groups exactly as the snapshot format's ``groups`` entries (docs/snapshot.md). The names they
share with Terraform and the manifests (tags, labels, taints) live in ``clusterspec.names``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Cluster(Protocol):
    """The Kubernetes side."""

    def list_pods(self) -> list[dict]: ...
    def list_nodes(self) -> list[dict]: ...
    def list_pdbs(self) -> list[dict]: ...

    def taint_node(self, name: str, taint: dict) -> None:
        """Add ``{"key", "value", "effect"}`` to the node's spec.taints (no-op when present)."""

    def untaint_node(self, name: str, key: str) -> None:
        """Remove every taint with ``key`` (no-op when absent)."""

    def annotate_node(self, name: str, annotations: dict[str, str | None]) -> None:
        """Merge annotations; a None value removes the key."""

    def evict_pod(self, namespace: str, name: str) -> bool:
        """Evict through the Eviction API; False when a disruption budget refuses it now (HTTP 429)."""

    def delete_node(self, name: str) -> None: ...

    def record_event(self, pod: dict, reason: str, message: str, type: str = "Normal") -> bool | None:
        """An Event on the pod (``kubectl describe pod`` shows it), e.g. TriggeredScaleUp/NotTriggerScaleUp.
        A live adapter only queues it and returns at once (False: dropped, its queue is full)."""

    def read_state(self) -> dict[str, str]:
        """The controller's persisted state (a ConfigMap's data); {} when there is none."""

    def write_state(self, data: dict[str, str]) -> None: ...


@runtime_checkable
class Cloud(Protocol):
    """The cloud side: Auto Scaling groups across every configured region."""

    def list_groups(self) -> list[dict]:
        """Every group in the snapshot format (name, region, zones, instance_type, min, max, desired, labels,
        taints, allocatable, priority, price_per_hour, instances=[{id, state, launched_at}])."""

    def set_desired(self, group: str, desired: int) -> None: ...

    def terminate_instance(self, group: str, instance_id: str) -> None:
        """Terminate one instance and decrement the group's desired capacity."""

    def scaling_failures(self, since: datetime) -> list[dict]:
        """Failed scaling activities since ``since``: ``{"group", "reason", "message", "at", "missing"}``,
        reason one of insufficient-capacity, instance-limit, vcpu-limit, spot, unknown; ``missing`` is how
        many of the requested instances did not launch (a partial failure keeps the rest)."""
