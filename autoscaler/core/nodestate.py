"""The node state machine: one function decides each node's state from what the snapshot shows.

States (docs/planner.md, "Node states"):

- ``booting``: an instance launched less than the boot timeout ago that has not registered as a node;
- ``unregistered``: an instance that has not registered within the boot timeout (terminated, counted as a failure);
- ``unready``: a registered node that is NotReady, for less than the dead-node timeout;
- ``dead``: NotReady for longer (terminated);
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
from autoscaler.core.model import Node, Pod
from autoscaler.core.names import (
    IDLE_SINCE_ANNOTATION,
    SCALE_DOWN_DISABLED_ANNOTATION,
    TO_BE_DELETED_SINCE_ANNOTATION,
    TO_BE_DELETED_TAINT,
)
from autoscaler.core.timeutil import parse_time

STATES = (
    "booting",
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

    @property
    def tainted(self) -> bool:
        return any(t[0] == TO_BE_DELETED_TAINT for t in self.node.taints)

    def workload(self) -> list[Pod]:
        return [p for p in self.pods if not p.daemonset and not p.mirror]


def idle_since(f: NodeFacts, now: datetime) -> datetime:
    """When the node last ran a non-DaemonSet pod: the later of its idle-since annotation and the finish time
    of its latest finished pod; ``now`` when neither is known (the plan then records it in the annotation)."""
    errors: list[str] = []
    noted = parse_time(f.node.annotations.get(IDLE_SINCE_ANNOTATION), "", errors)
    times = [t for t in (noted, f.finished_at) if t is not None]
    return max(times) if times else now


def tainted_since(node: Node) -> datetime | None:
    return parse_time(node.annotations.get(TO_BE_DELETED_SINCE_ANNOTATION), "", [])


def not_ready_for(n: Node, now: datetime) -> float:
    """Seconds a NotReady node has been NotReady (since its Ready condition changed, else since it registered)."""
    since = n.ready_changed_at or n.created_at or now
    return (now - since).total_seconds()


def is_dead(n: Node, now: datetime, config: PlannerConfig) -> bool:
    """NotReady for the dead-node timeout or longer: the plan terminates it."""
    return not n.ready and not_ready_for(n, now) >= config.dead_node_timeout_s


def node_state(f: NodeFacts, now: datetime, config: PlannerConfig) -> tuple[str, str]:
    """(state, reason) of one registered node."""
    n = f.node
    if not n.ready:
        age = not_ready_for(n, now)
        if is_dead(n, now, config):
            return "dead", f"NotReady for {age:.0f}s (dead-node timeout {config.dead_node_timeout_s:g}s)"
        return "unready", f"NotReady for {age:.0f}s"
    work = f.workload()
    if work or f.planned:
        what = f"{len(work)} pod(s)" if work else "pending pods planned onto it"
        return "busy", f"runs {what}"
    if n.group is None:
        return "unmanaged", "no node group owns this node"
    if n.annotations.get(SCALE_DOWN_DISABLED_ANNOTATION, "").lower() == "true":
        return "protected", f"annotated {SCALE_DOWN_DISABLED_ANNOTATION}=true"
    for p in f.pods:
        if p.safe_to_evict is False:
            return "protected", f"pod {p.key} is annotated safe-to-evict=false"
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
