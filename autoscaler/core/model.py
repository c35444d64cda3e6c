"""The parsed snapshot: compact, checked objects the planner works on (see docs/snapshot.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.core.podspec import PodShape

LONG_TERMINATING_EXTRA_S = 30


@dataclass(frozen=True, slots=True)
class LaunchTemplate:
    """A launch template version and its image: the group's current one, or the one an instance came from."""

    version: str | None = None  # the version number, as Auto Scaling reports it
    image: str | None = None  # the AMI id


@dataclass(frozen=True, slots=True)
class Instance:
    id: str
    state: str  # e.g. Pending, InService, Terminating (as the Cloud reports it)
    launched_at: datetime | None
    template: LaunchTemplate | None = None  # what it was launched from (drift: autoscaler/core/drift.py)


@dataclass(slots=True)
class Group:
    name: str
    region: str
    zones: tuple[str, ...]
    instance_type: str
    min: int
    max: int
    desired: int
    labels: dict[str, str]  # the template's labels, well-known ones included
    taints: tuple  # (key, value, effect)
    allocatable: dict[str, int]  # milli-units
    priority: int
    price_per_hour: float | None
    instances: tuple[Instance, ...]
    # host ports its DaemonSets take on every new node: (protocol, port, host IP)
    ports: frozenset = frozenset()
    # the DaemonSet pods every new node of the group runs, one per DaemonSet: (shape, namespace, labels); their
    # requests and ports are already out of ``allocatable`` and in ``ports``, their labels and anti-affinity
    # count on the node as any pod's (daemonsets.py)
    daemonsets: tuple = ()
    template: LaunchTemplate | None = None  # the version new instances get (drift: autoscaler/core/drift.py)


@dataclass(slots=True)
class Node:
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    taints: tuple
    allocatable: dict[str, int]
    unschedulable: bool
    ready: bool
    ready_changed_at: datetime | None  # lastTransitionTime of the Ready condition
    created_at: datetime | None
    instance_id: str | None  # from providerID aws:///<zone>/<id>
    zone: str | None
    region: str | None
    group: str | None  # the node group it belongs to, None for nodes no group manages


@dataclass(slots=True)
class Pod:
    namespace: str
    name: str
    labels: dict[str, str]
    phase: str  # status.phase; Gated or Deleting for unbound pods with scheduling gates or being deleted
    node_name: str | None
    owner_kind: str | None  # kind of the controlling owner (DaemonSet, Job, ReplicaSet, ...), None when bare
    owner_name: str | None
    daemonset: bool
    mirror: bool
    safe_to_evict: bool | None  # the safe-to-evict annotation, None when absent
    priority: int
    shape: PodShape
    started_at: datetime | None
    finished_at: datetime | None
    gang: str | None  # gang id ("job:<ns>/<job>" or "podgroup:<ns>/<group>"), None for independent pods
    gang_size: int | None  # required members of a PodGroup gang (None: all pending members of the gang)
    key: str = ""  # "<namespace>/<name>"
    nominated: str | None = None  # status.nominatedNodeName of an unbound pod: it preempted pods on that node
    # what cluster-autoscaler's drain rules look at (utils/drain/drain.go, simulator/drainability/rules)
    deleting_since: datetime | None = None  # metadata.deletionTimestamp
    grace_s: int = 30  # spec.terminationGracePeriodSeconds (default 30)
    controlled: bool = (
        False  # has a controller owner reference (ReplicaSet, Job, StatefulSet, ...): replicated
    )
    local_storage: bool = False  # a hostPath or emptyDir volume not listed in safe-to-evict-local-volumes
    do_not_disrupt: bool = False  # karpenter.sh/do-not-disrupt: "true"

    def __post_init__(self) -> None:
        if not self.key:
            self.key = f"{self.namespace}/{self.name}"

    @property
    def terminated(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def long_terminating(self, now: datetime) -> bool:
        """Deleted longer ago than its grace period plus 30 s: cluster-autoscaler takes it as gone
        (utils/drain/drain.go, ``IsPodLongTerminating``, ``PodLongTerminatingExtraThreshold``)."""
        return (
            self.deleting_since is not None
            and (now - self.deleting_since).total_seconds() > self.grace_s + LONG_TERMINATING_EXTRA_S
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed scaling activity, as ``Cloud.scaling_failures`` returns it."""

    group: str
    reason: str  # insufficient-capacity, instance-limit, vcpu-limit, spot, unknown (never-registered: ours)
    message: str
    at: datetime
    missing: int


@dataclass(slots=True)
class GroupState:
    """A group's failure state, carried between loops (plan ``group_state`` -> next snapshot ``group_state``)."""

    failures: int = 0
    backoff_until: datetime | None = None
    last_failure_at: datetime | None = None
    last_reason: str | None = None
    last_message: str | None = None


@dataclass(slots=True)
class Snapshot:
    now: datetime
    pods: list[Pod]
    nodes: list[Node]
    groups: list[Group]
    regions: list[str]  # spill-over order
    pdbs: list[dict] = field(default_factory=list)
    scaling_failures: list[Failure] = field(default_factory=list)
    group_state: dict[str, GroupState] = field(default_factory=dict)
    # capacity bought for pods that vanished while pending (deleted before a node came): per group, the node slots
    # still owed back, and the nodes no pod has ever landed on (the controller's watch saw every pod bound since
    # before they registered); such an empty node goes back without waiting out the idle threshold
    vanished: dict[str, int] = field(default_factory=dict)
    unused_nodes: frozenset[str] = frozenset()
