"""Scale-down: node states, then removal of empty nodes in two steps (taint, then terminate on re-check).

Only empty nodes (DaemonSet and mirror pods aside) are ever removed, so no pod is evicted: pods of Jobs and bare
pods keep running. Group minimums, warm pools and the per-plan scale-in cap hold nodes back; nodes held back
are reported as ``protected`` with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.core.config import PlannerConfig
from autoscaler.core.drift import drifted
from autoscaler.core.failures import GroupStatus
from autoscaler.core.model import Snapshot
from autoscaler.core.names import (
    DRIFTED_SINCE_ANNOTATION,
    DRIFTED_TAINT,
    IDLE_SINCE_ANNOTATION,
    TO_BE_DELETED_SINCE_ANNOTATION,
)
from autoscaler.core.nodestate import NodeFacts, idle_since, node_state, tainted_since
from autoscaler.core.scaleup import ScaleUp
from autoscaler.core.timeutil import parse_time, show_time

EMPTY_STATES = ("idle", "removable", "draining")
VANISHED = "bought for pods that vanished while pending, and no pod ever landed on it: given back at once"


@dataclass
class ScaleDown:
    actions: list[dict] = field(default_factory=list)  # {node, group, instance_id, action, reason}
    states: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, dict[str, str | None]] = field(default_factory=dict)
    empty: dict[str, int] = field(default_factory=dict)  # group -> empty ready nodes kept after this plan
    drift: dict[str, dict] = field(
        default_factory=dict
    )  # drifted node -> {group, reason, since, overdue, pods}
    events: list[dict] = field(default_factory=list)  # {pod, reason, message}: pods holding overdue nodes


def gather(snap: Snapshot) -> dict[str, NodeFacts]:
    groups = {g.name: g for g in snap.groups}
    facts = {n.name: NodeFacts(n, [], None, False, groups.get(n.group)) for n in snap.nodes}
    for p in snap.pods:
        where = p.node_name or p.nominated  # a nominated pod is about to run there
        f = facts.get(where) if where else None
        if f is None:
            continue
        if not p.terminated:
            f.pods.append(p)
        elif (
            not p.daemonset
            and not p.mirror
            and p.finished_at
            and (f.finished_at is None or p.finished_at > f.finished_at)
        ):
            f.finished_at = p.finished_at
    return facts


def _action(node, action: str, reason: str) -> dict:
    return {
        "node": node.name,
        "group": node.group,
        "instance_id": node.instance_id,
        "action": action,
        "reason": reason,
    }


def scale_down(
    snap: Snapshot,
    config: PlannerConfig,
    statuses: dict[str, GroupStatus],
    up: ScaleUp,
    removed: dict[str, int],
) -> ScaleDown:
    """``removed``: per group, instances this plan already terminates (never registered)."""
    out = ScaleDown()
    now = snap.now
    facts = gather(snap)
    reused = set(up.reused)
    drift = drifted(snap)
    candidates: dict[str, list[tuple[datetime, int, NodeFacts]]] = {}
    owed = dict(snap.vanished)  # node slots bought for vanished pods, per group, not given back yet
    for name, f in facts.items():
        f.planned = name in up.placed_on
        f.life = up.lifecycle.get(name)
        state, reason = node_state(f, now, config)
        if name in drift and state in ("idle", "removable"):
            state, reason = "removable", f"drifted: {drift[name][0]}"
        elif (
            state == "idle"
            and name in snap.unused_nodes
            and owed.get(f.node.group or "", 0) > 0
            and not f.workload(now)
            and f.finished_at is None
        ):
            owed[f.node.group] -= 1
            state, reason = "removable", VANISHED
        out.states[name], out.reasons[name] = state, reason
        n = f.node
        _drift(out, f, drift.get(name), state, now, config)
        if state == "dead" and n.group is not None:
            out.actions.append(_action(n, "terminate", reason))
            removed[n.group] = removed.get(n.group, 0) + 1
        elif f.tainted and state not in ("draining", "dead", "unready", "starting"):
            why = "a pending pod can use it" if name in reused else reason
            out.actions.append(_action(n, "untaint", why))
            _annotate(out, n, TO_BE_DELETED_SINCE_ANNOTATION, None)
        if state in EMPTY_STATES or (state == "protected" and not f.workload(now)):
            since = idle_since(f, now)
            _annotate(out, n, IDLE_SINCE_ANNOTATION, show_time(since))
        elif state == "busy":
            _annotate(out, n, IDLE_SINCE_ANNOTATION, None)
        if state in EMPTY_STATES and n.group is not None:
            order = 0 if state == "draining" else 1 if state == "removable" else 2
            when = (tainted_since(n) or now) if state == "draining" else idle_since(f, now)
            candidates.setdefault(n.group, []).append((when, order, f))
    _remove(out, snap, config, statuses, candidates, removed, drift)
    return out


def _drift(out: ScaleDown, f: NodeFacts, drift: tuple[str, str] | None, state: str, now, config) -> None:
    """The drift marks of one node (autoscaler/core/drift.py): its drifted-since annotation, the soft taint on a
    busy drifted node (removed from a node that is no longer drifted), and the deadline's report."""
    n = f.node
    soft = any(t[0] == DRIFTED_TAINT for t in n.taints)
    if drift is None:
        if n.annotations.get(DRIFTED_SINCE_ANNOTATION) is not None:
            _annotate(out, n, DRIFTED_SINCE_ANNOTATION, None)
        if soft:
            out.actions.append(_action(n, "unmark-drifted", "no longer drifted"))
        return
    why, version = drift
    since = parse_time(n.annotations.get(DRIFTED_SINCE_ANNOTATION), "", []) or now
    _annotate(out, n, DRIFTED_SINCE_ANNOTATION, show_time(since))
    if state in ("busy", "protected") and not soft:
        out.actions.append({**_action(n, "mark-drifted", why), "version": version})
    pods = sorted(p.key for p in f.workload(now))
    age = (now - since).total_seconds()
    overdue = bool(config.drift_deadline_s) and age >= config.drift_deadline_s and bool(pods)
    out.drift[n.name] = {
        "group": n.group,
        "reason": why,
        "since": show_time(since),
        "overdue": overdue,
        "pods": pods,
    }
    if overdue:
        for key in pods:
            out.events.append(
                {
                    "pod": key,
                    "reason": "NodeDriftOverdue",
                    "message": f"node {n.name} is drifted ({why}) for {_span(age)}, past the deadline of "
                    f"{_span(config.drift_deadline_s)}; this pod keeps it. It is replaced once empty; nothing "
                    "is evicted",
                }
            )


def _span(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _annotate(out: ScaleDown, node, key: str, value: str | None) -> None:
    if node.annotations.get(key) != value:
        out.annotations.setdefault(node.name, {})[key] = value


def _remove(
    out: ScaleDown, snap: Snapshot, config: PlannerConfig, statuses, candidates, removed, drift=None
) -> None:
    now = snap.now
    cap = max(1, math.floor(config.max_scale_in_fraction * len(snap.nodes)))
    groups = {g.name: g for g in snap.groups}
    drift = drift or {}
    to_taint = []
    for gname, items in candidates.items():
        g = groups[gname]
        # drifted nodes first: neither the minimum nor the warm pool keeps them (the minimum is refilled below
        # by raising desired capacity for each one terminated, with a node on the group's current version)
        items.sort(key=lambda t: (t[2].node.name not in drift, t[1], t[0], t[2].node.name))
        warm = config.warm_pool.get(gname, 0)
        n_drift = sum(1 for t in items if t[2].node.name in drift)
        kept = len(items) - n_drift
        allowed = n_drift + max(0, min(statuses[gname].desired - g.min - removed.get(gname, 0) - n_drift,
                                       kept - warm))  # fmt: skip
        out.empty[gname] = len(items)
        for i, (when, _order, f) in enumerate(items):
            n = f.node
            state = out.states[n.name]
            if i >= allowed:
                why = (
                    f"warm pool of {warm} idle node(s)"
                    if len(items) - warm <= statuses[gname].desired - g.min - removed.get(gname, 0)
                    else f"group minimum of {g.min}"
                )
                if state == "draining":
                    out.actions.append(_action(n, "untaint", f"kept: {why}"))
                    _annotate(out, n, TO_BE_DELETED_SINCE_ANNOTATION, None)
                if state != "idle":
                    out.states[n.name], out.reasons[n.name] = "protected", f"kept for the {why}"
                continue
            if state == "draining":
                since = tainted_since(n)
                if since is None:
                    _annotate(out, n, TO_BE_DELETED_SINCE_ANNOTATION, show_time(now))
                elif since < now:
                    out.actions.append(
                        _action(n, "terminate", f"still empty on re-check (tainted {show_time(since)})")
                    )
                    out.empty[gname] -= 1
                    if n.name in drift:  # replaced: a group at its minimum is raised for it (planner)
                        removed[gname] = removed.get(gname, 0) + 1
            elif state == "removable":
                to_taint.append((when, f))
    # the nodes bought for vanished pods first and outside the cap: their number is bounded by the slots the
    # controller bought for pods now gone, not by a reading of the cluster that could be wrong
    to_taint.sort(key=lambda t: (out.reasons[t[1].node.name] != VANISHED, t[0], t[1].node.name))
    i = 0
    for _, f in to_taint:
        n = f.node
        if out.reasons[n.name] != VANISHED:
            i += 1
        if i > cap:
            out.states[n.name] = "protected"
            out.reasons[n.name] = f"kept by the scale-in cap ({cap} node(s) per plan)"
            continue
        out.actions.append(_action(n, "taint", out.reasons[n.name]))
        _annotate(out, n, TO_BE_DELETED_SINCE_ANNOTATION, show_time(now))
        out.states[n.name] = "draining"
        out.empty[n.group] -= 1
