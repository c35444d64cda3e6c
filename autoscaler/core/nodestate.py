"""The node state machine: one function decides each node's state from what the snapshot shows.

States (docs/planner.md, "Node states"):

- ``booting``: an instance launched less than the boot timeout ago that has not registered as a node;
- ``unregistered``: an instance that has not registered within the boot timeout (terminated, counted as a failure);
- ``starting``: a registered node of a group that cannot take pods yet (NotReady since it registered, a not-ready,
  uninitialized or startup taint, or its group's GPUs not advertised yet), within the boot timeout: upcoming
  capacity of its group (cluster-autoscaler: clusterstate ``isNodeStillStarting``, customresources
  ``FilterOutNodesWithUnreadyResources``);
- ``unready``: a registered node that cannot take pods and is not starting, for less than the unready timeout;
- ``dead``: unready for longer, with nothing on it that the autoscaler must not evict (terminated);
- ``unmanaged``: a node no group owns (physical servers, control plane): never scaled down;
- ``busy``: runs (or is about to run) a pod that is neither a DaemonSet nor a mirror pod;
- ``protected``: empty, but annotated as not to be scaled down or running a pod that is not safe to evict;
- ``idle``: empty for less than the idle threshold;
- ``removable``: empty for longer than the idle threshold;
- ``draining``: carries the to-be-deleted taint, awaiting the re-check in a later loop.

Group-wide limits (minimum size, warm pool, scale-in cap) then keep some ``removable`` or ``draining`` nodes;
those are reported as ``protected`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from autoscaler.core.config import PlannerConfig
from autoscaler.core.model import Group, Node, Pod
from autoscaler.core.names import (
    IDLE_SINCE_ANNOTATION,
    NETWORK_UNAVAILABLE_TAINT,
    NOT_READY_TAINT,
    SCALE_DOWN_DISABLED_ANNOTATION,
    STARTUP_TAINT_PREFIXES,
    TO_BE_DELETED_SINCE_ANNOTATION,
    TO_BE_DELETED_TAINTS,
    UNINITIALIZED_TAINT,
)
from autoscaler.core.quantity import is_extended
from autoscaler.core.timeutil import parse_time

STATES = (
    "booting",
    "starting",
    "unregistered",
    "unready",
    "dead",
    "unmanaged",
    "busy",
    "protected",
    "idle",
    "removable",
    "draining",
)


@dataclass
class NodeFacts:
    """What the state function looks at, gathered once per node."""

    node: Node
    pods: list[Pod]  # pods bound to the node that have not finished
    finished_at: datetime | None  # latest finish of a non-DaemonSet pod on the node
    planned: bool  # this plan puts pending pods on it
    group: Group | None = None
    life: tuple[str, str] | None = None  # lifecycle() as scale-up found it (computed once per plan)

    @property
    def tainted(self) -> bool:
        return any(t[0] in TO_BE_DELETED_TAINTS for t in self.node.taints)

    def workload(self, now: datetime) -> list[Pod]:
        """The pods that keep the node: not DaemonSet or mirror pods, not deleted longer ago than their grace
        period plus 30 s (cluster-autoscaler, utils/drain/drain.go: such pods are skipped)."""
        return [p for p in self.pods if not p.daemonset and not p.mirror and not p.long_terminating(now)]


def idle_since(f: NodeFacts, now: datetime) -> datetime:
    """When the node last ran a non-DaemonSet pod: the later of its idle-since annotation and the finish time
    of its latest finished pod; ``now`` when neither is known (the plan then records it in the annotation)."""
    errors: list[str] = []
    noted = parse_time(f.node.annotations.get(IDLE_SINCE_ANNOTATION), "", errors)
    times = [t for t in (noted, f.finished_at) if t is not None]
    return max(times) if times else now


def tainted_since(node: Node) -> datetime | None:
    return parse_time(node.annotations.get(TO_BE_DELETED_SINCE_ANNOTATION), "", [])


STARTUP_DELAY_S = 120  # clusterstate.MaxStatusSettingDelayAfterCreation: NotReady this soon after creation


def not_usable_yet(n: Node, g: Group | None) -> str | None:
    """Why a registered node cannot take pods although it may be coming up, else None.

    NotReady (kube_util.GetReadinessState); the taints a starting node carries: ``node.kubernetes.io/not-ready``
    (kubelet registers with it, the node lifecycle controller removes it), ``network-unavailable``,
    ``node.cloudprovider.kubernetes.io/uninitialized`` (until the cloud controller initialises the node) and
    cluster-autoscaler's startup taints; and, for a group whose template offers an extended resource such as
    ``nvidia.com/gpu``, the node not advertising it yet while the device plugin starts (cluster-autoscaler,
    processors/customresources/gpu_processor.go ``FilterOutNodesWithUnreadyResources``, which keys it on the
    GPU label; our group templates say which nodes must have GPUs)."""
    if not n.ready:
        return "NotReady"
    for key, _value, _effect in n.taints:
        if key in (NOT_READY_TAINT, UNINITIALIZED_TAINT, NETWORK_UNAVAILABLE_TAINT) or key.startswith(
            STARTUP_TAINT_PREFIXES
        ):
            return f"taint {key}"
    if g is not None:
        for r in _accelerators(g):
            if not n.allocatable.get(r):
                return f"{r} not advertised yet"
    return None


def _accelerators(g: Group) -> list[str]:
    """The extended resources (device plugins: nvidia.com/gpu, ...) a group's template offers."""
    return [r for r, q in g.allocatable.items() if q > 0 and is_extended(r)]


def lifecycle(n: Node, g: Group | None, now: datetime, config: PlannerConfig) -> tuple[str, str]:
    """("ready" | "starting" | "unready" | "dead", reason) of a registered node.

    ``starting``: a node of a group that is not usable yet, registered less than the boot timeout ago and never
    Ready since (its Ready condition last changed within 2 minutes of creation, as clusterstate's
    ``isNodeStillStarting`` says): upcoming capacity of its group, shaped like the group's template.
    ``unready``: not usable otherwise; ``dead`` once unready for ``dead_node_timeout_s`` (cluster-autoscaler's
    ``--scale-down-unready-time``, 20 minutes)."""
    return _lifecycle(n, g, now, config)


def _lifecycle(n: Node, g: Group | None, now: datetime, config: PlannerConfig) -> tuple[str, str]:
    why = not_usable_yet(n, g)
    if why is None:
        return "ready", ""
    born = n.created_at or n.ready_changed_at
    age = (now - born).total_seconds() if born else None
    never_ready = (
        n.ready
        or n.ready_changed_at is None
        or n.created_at is None
        or (n.ready_changed_at - n.created_at).total_seconds() < STARTUP_DELAY_S
    )
    since = (n.ready_changed_at if not n.ready else None) or n.created_at or now
    unready = (now - since).total_seconds()
    if unready >= config.dead_node_timeout_s:
        return "dead", f"unready ({why}) for {unready:.0f}s (unready timeout {config.dead_node_timeout_s:g}s)"
    if g is not None and never_ready and age is not None and age < config.boot_timeout_s:
        return (
            "starting",
            f"registered {age:.0f}s ago, not usable yet ({why}): upcoming capacity of its group",
        )
    return "unready", f"unready ({why}) for {unready:.0f}s"


def is_dead(n: Node, g: Group | None, now: datetime, config: PlannerConfig) -> bool:
    return lifecycle(n, g, now, config)[0] == "dead"


def blocking_pod(f: NodeFacts, now: datetime) -> str | None:
    """Why a pod on the node keeps it, by cluster-autoscaler's drain rules (utils/drain/drain.go
    ``GetPodsForDeletionOnNodeDrain``) and, stricter, the project's promise that the autoscaler evicts nothing:
    mirror, DaemonSet, finished and long-terminating pods never keep a node; any other pod does, with CA's
    reason when CA would block too."""
    for p in f.workload(now):
        if p.terminated:
            continue
        if p.do_not_disrupt:
            return f"pod {p.key} is annotated karpenter.sh/do-not-disrupt=true"
        if p.safe_to_evict is False:
            return f"pod {p.key} is annotated safe-to-evict=false"
        if p.safe_to_evict is not True and not p.controlled:
            return f"pod {p.key} is not replicated (no controller)"
        if p.safe_to_evict is not True and p.local_storage:
            return f"pod {p.key} has local storage (emptyDir or hostPath)"
        return f"pod {p.key} runs on it (the autoscaler never evicts a running pod)"
    return None


def node_state(f: NodeFacts, now: datetime, config: PlannerConfig) -> tuple[str, str]:
    """(state, reason) of one registered node."""
    n = f.node
    kind, why = f.life or lifecycle(n, f.group, now, config)
    if kind == "dead":
        disabled = n.annotations.get(SCALE_DOWN_DISABLED_ANNOTATION, "").lower() == "true"
        if disabled:
            return "protected", f"{why}; annotated {SCALE_DOWN_DISABLED_ANNOTATION}=true"
        blocked = blocking_pod(f, now)
        if blocked:
            return "protected", f"{why}; {blocked}"
        return "dead", why
    if kind != "ready":
        return kind, why
    work = f.workload(now)
    if work or f.planned:
        what = f"{len(work)} pod(s)" if work else "pending pods planned onto it"
        return "busy", f"runs {what}"
    if n.group is None:
        return "unmanaged", "no node group owns this node"
    if n.annotations.get(SCALE_DOWN_DISABLED_ANNOTATION, "").lower() == "true":
        return "protected", f"annotated {SCALE_DOWN_DISABLED_ANNOTATION}=true"
    if f.tainted:
        return "draining", "tainted for removal"
    idle = (now - idle_since(f, now)).total_seconds()
    if idle >= config.idle_threshold_s:
        return "removable", f"idle for {idle:.0f}s (threshold {config.idle_threshold_s:g}s)"
    return "idle", f"idle for {idle:.0f}s"


def instance_state(launched_at: datetime | None, now: datetime, config: PlannerConfig) -> tuple[str, str]:
    """(state, reason) of an instance that has no node yet."""
    if launched_at is None:
        return "booting", "launched (time unknown), not registered yet"
    age = (now - launched_at).total_seconds()
    if age >= config.boot_timeout_s:
        return (
            "unregistered",
            f"not registered {age:.0f}s after launch (boot timeout {config.boot_timeout_s:g}s)",
        )
    return "booting", f"launched {age:.0f}s ago, not registered yet"
