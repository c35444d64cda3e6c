"""Failed scaling activities: exponential back-off per group, reset after a success, desired size corrected.

A group's failure state is carried between loops: the plan's ``group_state`` is fed back as the next snapshot's
``group_state`` (docs/snapshot.md). New failures are the ``scaling_failures`` records later than the last one
seen, plus instances that did not register as nodes within the boot timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from autoscaler.core.config import PlannerConfig
from autoscaler.core.model import Failure, Group, GroupState, Snapshot
from autoscaler.core.timeutil import show_time

GONE_STATES = ("terminating", "terminated", "terminating:wait", "terminating:proceed", "shutting-down")


@dataclass
class GroupStatus:
    state: GroupState
    desired: int  # the desired size to plan from (brought back to what exists after a failure)
    blocked: str | None  # why the group may not grow now, None when it may
    live: int  # instances that exist (not terminating)


def live_instances(group: Group) -> list:
    return [i for i in group.instances if i.state.lower() not in GONE_STATES]


def gone_instances(snap: Snapshot) -> set[str]:
    """Ids of the instances the groups list as terminating or terminated: their nodes are going away."""
    return {i.id for g in snap.groups for i in g.instances if i.state.lower() in GONE_STATES}


def group_statuses(
    snap: Snapshot, config: PlannerConfig, doomed: dict[str, list[str]]
) -> dict[str, GroupStatus]:
    """Each group's status; ``doomed`` holds, per group, instances that never registered (a failure too)."""
    by_group: dict[str, list] = {}
    for f in snap.scaling_failures:
        by_group.setdefault(f.group, []).append(f)
    registered = {n.instance_id for n in snap.nodes if n.instance_id}
    gone = gone_instances(snap)
    nodes_of: dict[str, int] = {}  # per group, registered nodes whose instance is not going away
    for n in snap.nodes:
        if n.group and n.instance_id not in gone:
            nodes_of[n.group] = nodes_of.get(n.group, 0) + 1
    out = {}
    for g in snap.groups:
        st = replace(snap.group_state.get(g.name) or GroupState())
        fresh = [
            f for f in by_group.get(g.name, ()) if st.last_failure_at is None or f.at > st.last_failure_at
        ]
        fresh.sort(key=lambda f: f.at)
        live = live_instances(g)
        if doomed.get(g.name):
            n = len(doomed[g.name])
            fresh.append(_never_registered(g.name, n, snap.now, config.boot_timeout_s))
        if fresh:
            last = fresh[-1]
            st.failures += 1
            st.last_failure_at = max(f.at for f in fresh)
            st.last_reason, st.last_message = last.reason, last.message
            delay = min(config.backoff_base_s * 2 ** (st.failures - 1), config.backoff_max_s)
            st.backoff_until = snap.now + timedelta(seconds=delay)
        elif st.failures and st.last_failure_at is not None:
            ok = [
                i for i in live if i.launched_at and i.launched_at > st.last_failure_at and i.id in registered
            ]
            if ok:
                st = GroupState()  # a node launched after the failure registered: reset
        # what exists: the live instances, and at least the group's nodes whose instance is not going away (nodes
        # matched by the node-group label run too, whether or not the snapshot lists their instances)
        exists = max(len(live), nodes_of.get(g.name, 0))
        desired = min(g.desired, exists) if fresh else g.desired
        blocked = None
        if st.backoff_until is not None and snap.now < st.backoff_until:
            blocked = (
                f"group {g.name} backs off until {show_time(st.backoff_until)} after {st.last_reason}"
                + (f" ({st.last_message})" if st.last_message else "")
            )
        out[g.name] = GroupStatus(st, desired, blocked, len(live))
    return out


def _never_registered(group: str, n: int, now, boot_timeout_s: float):
    return Failure(
        group, "never-registered", f"{n} instance(s) did not register within {boot_timeout_s:g}s", now, n
    )


def state_to_dict(st: GroupState) -> dict:
    return {
        "failures": st.failures,
        "backoff_until": show_time(st.backoff_until),
        "last_failure": None
        if st.last_failure_at is None
        else {"reason": st.last_reason, "message": st.last_message, "at": show_time(st.last_failure_at)},
    }
