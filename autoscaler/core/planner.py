"""``plan(snapshot, config)``: the whole decision of one loop, pure (time comes from ``snapshot.now``)."""

from __future__ import annotations

import logging

from autoscaler.core.config import PlannerConfig
from autoscaler.core.failures import gone_instances, group_statuses, live_instances, state_to_dict
from autoscaler.core.gcpause import gc_paused
from autoscaler.core.model import Snapshot
from autoscaler.core.nodestate import instance_state
from autoscaler.core.result import Plan
from autoscaler.core.scaledown import scale_down
from autoscaler.core.scaleup import scale_up

__all__ = ["Plan", "plan"]

log = logging.getLogger("autoscaler.core")


def plan(snapshot: Snapshot, config: PlannerConfig | None = None) -> Plan:
    """The plan for one loop; pure: the same snapshot and config always give the same plan."""
    with gc_paused():
        return _plan(snapshot, config or PlannerConfig())


def _plan(snapshot: Snapshot, config: PlannerConfig) -> Plan:
    out = Plan()
    registered: dict[str, int] = {}
    gone = gone_instances(snapshot)
    for n in snapshot.nodes:
        if n.group and n.instance_id not in gone:  # a node of a terminating instance is no capacity
            registered[n.group] = registered.get(n.group, 0) + 1
    node_ids = {n.instance_id for n in snapshot.nodes if n.instance_id}
    listed = {i.id for g in snapshot.groups for i in g.instances}
    unnamed: dict[str, int] = {}  # per group, nodes matched by label only: no providerID names their instance
    for n in snapshot.nodes:
        if n.group and n.instance_id not in listed:
            unnamed[n.group] = unnamed.get(n.group, 0) + 1
    doomed: dict[str, list[str]] = {}
    launching: dict[str, list] = {}  # per group, instances not registered yet (within the boot timeout)
    for g in snapshot.groups:
        waiting = [inst for inst in live_instances(g) if inst.id not in node_ids]
        # a node matched by label is one of these instances, we cannot tell which: that many of them (the oldest)
        # count as registered rather than as never registered
        oldest = sorted(waiting, key=lambda i: (i.launched_at is None, i.launched_at or snapshot.now))
        named = {i.id for i in oldest[: unnamed.get(g.name, 0)]}
        for inst in waiting:
            if inst.id in named:
                continue
            state, reason = instance_state(inst.launched_at, snapshot.now, config)
            out.node_states[inst.id], out.node_reasons[inst.id] = state, reason
            if state != "unregistered":
                launching.setdefault(g.name, []).append(inst)
            if state == "unregistered":
                doomed.setdefault(g.name, []).append(inst.id)
                out.scale_down.append(
                    {
                        "node": None,
                        "group": g.name,
                        "instance_id": inst.id,
                        "action": "terminate",
                        "reason": reason,
                    }
                )
    statuses = group_statuses(snapshot, config, doomed)
    upcoming = {
        g.name: max(0, statuses[g.name].desired - registered.get(g.name, 0) - len(doomed.get(g.name, ())))
        for g in snapshot.groups
    }
    up = scale_up(snapshot, config, statuses, upcoming)
    removed = {g: len(ids) for g, ids in doomed.items()}
    down = scale_down(snapshot, config, statuses, up, removed)
    new_nodes = dict(up.new_nodes)
    _warm_pool(snapshot, config, statuses, up, down, upcoming, new_nodes)
    _spare_gpus(snapshot, config, statuses, up, down, upcoming, new_nodes)
    for g_name, ids in _cancel_unneeded(snapshot, config, statuses, up, down, upcoming, new_nodes, launching,
                                        removed).items():  # fmt: skip
        removed[g_name] = removed.get(g_name, 0) + len(ids)
        for inst_id in ids:
            out.node_reasons[inst_id] = CANCELLED
            out.scale_down.append(
                {
                    "node": None,
                    "group": g_name,
                    "instance_id": inst_id,
                    "action": "terminate",
                    "reason": CANCELLED,
                }
            )

    out.scale_up = {g: n for g, n in new_nodes.items() if n}
    held: dict[str, int] = {}
    for g in snapshot.groups:
        want = statuses[g.name].desired + new_nodes.get(g.name, 0)
        # terminations (dead or never-registered instances) decrement the group: keep it at its minimum,
        # which replaces those instances; but never above its maximum (the API refuses it): the terminations
        # that would then take the group below its minimum are held back
        want += max(0, g.min - (want - removed.get(g.name, 0)))
        if want > g.max:
            held[g.name] = want - g.max
            want = g.max
        if want != g.desired:
            out.desired[g.name] = want
        st = statuses[g.name].state
        if st.failures or st.backoff_until:
            out.group_state[g.name] = state_to_dict(st)
    out.unschedulable = [{"pod": p.key, "reason": r} for p, r in up.unschedulable]
    out.scale_down.extend(down.actions)
    out.node_states.update(down.states)
    out.node_reasons.update(down.reasons)
    if held:
        _hold_back(out, held, snapshot)
    out.annotations = down.annotations
    out.placements = up.placements
    out.events = _events(snapshot, up, statuses, new_nodes, config.max_events)
    out.events.extend(down.events[: max(0, config.max_events - len(out.events))])
    out.drift = down.drift
    out.stats = {
        "pending_pods": up.pending,
        "pod_classes": up.classes,
        "placed_existing": sum(up.placed_on.values()),
        "placed_upcoming": sum(1 for _, _, kind in up.scale_up_pods if kind == "upcoming"),
        "placed_new": sum(1 for _, _, kind in up.scale_up_pods if kind == "new"),
        "unschedulable": len(up.unschedulable),
        "new_nodes": sum(new_nodes.values()),
    }
    log.info("plan: %s; node states %s", out.stats, out.state_counts())
    for name, state in out.node_states.items():
        log.debug("node %s: %s (%s)", name, state, out.node_reasons.get(name, ""))
    return out


def _hold_back(out: Plan, held: dict[str, int], snapshot: Snapshot) -> None:
    """Drop the last ``held[group]`` terminations of dead or never-registered instances of each group: the group
    cannot be raised above its maximum to replace them, and a terminate (which decrements) would take it below
    its minimum. They stay in their state with the reason."""
    groups = {g.name: g for g in snapshot.groups}
    kept = []
    for a in reversed(out.scale_down):
        key, g = a["node"] or a["instance_id"], a["group"]
        if (
            a["action"] == "terminate"
            and held.get(g)
            and out.node_states.get(key) in ("dead", "unregistered")
        ):
            held[g] -= 1
            out.node_reasons[key] += (
                f"; not terminated: group {g} is at its maximum ({groups[g].max}) and a terminate would take it"
                f" below its minimum ({groups[g].min})"
            )
            continue
        kept.append(a)
    out.scale_down = kept[::-1]


CANCELLED = "launched for pods that are no longer pending and not registered yet: cancelled before it boots"


def _cancel_unneeded(snapshot, config, statuses, up, down, upcoming, new_nodes, launching, removed) -> dict:
    """Per group, the launching instances (not registered yet) no pending pod needs: capacity bought for pods
    that were deleted, or that found room elsewhere, since. The upcoming nodes of a group less those this plan
    places pods on, less those its warm pool still needs, never below the group's minimum, and none in a group
    this plan grows; the newest instances go first (the oldest are the nearest to ready). Requests that are no
    instance yet are left alone: lowering the desired size below the instances the group will have would let
    Auto Scaling choose which to terminate; they are cancelled as instances in a later pass. The controller
    terminates each only when a fresh read finds no Node for it (docs/autoscaler.md)."""
    out: dict[str, list[str]] = {}
    for g in snapshot.groups:
        if new_nodes.get(g.name) or not launching.get(g.name):
            continue
        warm = config.warm_pool.get(g.name, 0)
        warm_have = down.empty.get(g.name, 0) + up.starting_spare.get(g.name, 0)
        spare = upcoming.get(g.name, 0) - up.upcoming_used.get(g.name, 0) - max(0, warm - warm_have)
        spare = min(spare, statuses[g.name].desired - removed.get(g.name, 0) - g.min)
        spare -= max(0, upcoming.get(g.name, 0) - len(launching[g.name]))  # requests with no instance yet
        if spare <= 0:
            continue
        newest = sorted(
            launching[g.name], key=lambda i: (i.launched_at is not None, i.launched_at), reverse=True
        )
        out[g.name] = [i.id for i in newest[:spare]]
    return out


GPU = "nvidia.com/gpu"


def _gpus(quantities: dict[str, int]) -> int:
    return quantities.get(GPU, 0) // 1000


def _active(snapshot, config) -> bool:
    """Jobs are coming: a pod is pending, or one started within the idle threshold. Between bursts the spare is
    kept; after a quiet idle threshold it goes with the other empty nodes, and the first job after that waits."""
    now = snapshot.now
    for p in snapshot.pods:
        if p.daemonset or p.mirror or p.terminated:
            continue
        if not p.node_name:
            return True
        if p.started_at is not None and (now - p.started_at).total_seconds() < config.idle_threshold_s:
            return True
    return False


def _price_per_gpu(g) -> float:
    return (g.price_per_hour or float("inf")) / max(1, _gpus(g.allocatable))


def _spare_gpus(snapshot, config, statuses, up, down, upcoming, new_nodes) -> None:
    """Keep ``config.spare_gpus`` GPUs free for the next jobs: on the GPU groups that take any GPU pod (their only
    taint is the GPU one), the GPUs no pod requests or is planned onto on usable and starting nodes that are not
    being removed, plus the launching nodes no pod is placed on. When fewer are free, nodes are added in the first
    groups, in the order new nodes take (regions in spill-over order, then group priority, then price per GPU),
    and the empty nodes that make up the spare are not tainted for removal (``down`` edited in place)."""
    want = int(config.spare_gpus)
    if want <= 0 or not _active(snapshot, config):
        return
    region_idx = {r: i for i, r in enumerate(snapshot.regions)}
    plain = [g for g in snapshot.groups if _gpus(g.allocatable) > 0 and all(t[0] == GPU for t in g.taints)]
    names = {g.name for g in plain}
    used: dict[str, int] = {}
    for p in snapshot.pods:
        where = p.node_name or p.nominated
        if where and not p.terminated:
            used[where] = used.get(where, 0) + _gpus(dict(p.shape.requests))
    pending = {p.key: p for p in snapshot.pods if not p.node_name}
    for key, where in up.placements.items():
        if key in pending and not where.startswith(("new:", "upcoming:")):
            used[where] = used.get(where, 0) + _gpus(dict(pending[key].shape.requests))
    tainting = {a["node"] for a in down.actions if a["action"] in ("taint", "terminate") and a["node"]}
    free, empty = 0, []
    allocatable = {g.name: g.allocatable for g in plain}
    groups_by_name = {g.name: g for g in plain}
    by_name = {n.name: n for n in snapshot.nodes}
    for n in snapshot.nodes:
        state = down.states.get(n.name)
        if n.group not in names or n.name in tainting or state in ("draining", "dead", "unready"):
            continue
        group_gpus = _gpus(allocatable[n.group])
        left = max(
            0, max(_gpus(n.allocatable), group_gpus if state == "starting" else 0) - used.get(n.name, 0)
        )
        free += left
    for g in plain:
        free += max(0, upcoming.get(g.name, 0) - up.upcoming_used.get(g.name, 0)) * _gpus(g.allocatable)
    # empty nodes this plan would start removing: kept while the spare needs them (the newest taint first)
    for a in down.actions:
        n = by_name.get(a["node"] or "")
        if a["action"] == "taint" and n is not None and n.group in names and not used.get(n.name):
            empty.append((a, n))
    # the cheapest GPUs first, and never a node with more GPUs than are missing (an empty 8-GPU node is not kept
    # for one missing GPU: a one-GPU node is bought for it below)
    empty.sort(key=lambda an: (_price_per_gpu(groups_by_name[an[1].group]), an[1].name))
    for a, n in empty:
        if free >= want:
            break
        if _gpus(n.allocatable) > want - free:
            continue
        down.actions.remove(a)
        down.annotations.get(n.name, {}).pop("research.cluster/to-be-deleted-since", None)
        down.states[n.name], down.reasons[n.name] = "protected", f"kept for the {want} spare GPU(s)"
        free += _gpus(n.allocatable)
    if free >= want:
        return
    cap_left = config.max_new_nodes_per_loop - sum(new_nodes.values())
    order = sorted(
        plain,
        key=lambda g: (
            region_idx.get(g.region, len(region_idx)),
            -g.priority,
            _price_per_gpu(g),
            g.name,
        ),
    )
    for g in order:
        if free >= want or cap_left <= 0:
            break
        if statuses[g.name].blocked:
            continue
        per = _gpus(g.allocatable)
        room = g.max - statuses[g.name].desired - new_nodes.get(g.name, 0)
        add = max(0, min(-(-(want - free) // per), room, cap_left))
        if add:
            new_nodes[g.name] = new_nodes.get(g.name, 0) + add
            free += add * per
            cap_left -= add


def _warm_pool(snapshot, config, statuses, up, down, upcoming, new_nodes) -> None:
    """Launch nodes so that each group with a warm pool keeps that many empty nodes ready."""
    cap_left = config.max_new_nodes_per_loop - sum(new_nodes.values())
    for g in snapshot.groups:
        want = config.warm_pool.get(g.name, 0)
        if not want or statuses[g.name].blocked:
            continue
        spare = (
            down.empty.get(g.name, 0)
            + up.starting_spare.get(g.name, 0)  # registered, still starting, nothing planned onto it
            + upcoming.get(g.name, 0)
            - up.upcoming_used.get(g.name, 0)
        )
        room = g.max - statuses[g.name].desired - new_nodes.get(g.name, 0)
        add = max(0, min(want - spare, room, cap_left))
        if add:
            new_nodes[g.name] = new_nodes.get(g.name, 0) + add
            cap_left -= add


def _events(snapshot: Snapshot, up, statuses, new_nodes: dict[str, int], limit: int) -> list[dict]:
    groups = {g.name: g for g in snapshot.groups}
    out = []
    for p, gname, kind in up.scale_up_pods:
        if len(out) >= limit:
            break
        g = groups[gname]
        if kind == "new":
            before = statuses[gname].desired
            msg = f"pod triggered scale-up: [{gname} {before}->{before + new_nodes[gname]} (max: {g.max})]"
        else:
            msg = f"pod waits for a node of group {gname} that is already launching"
        out.append({"pod": p.key, "reason": "TriggeredScaleUp", "message": msg})
    messages: dict[str, str] = {}  # a burst's pods share a few reasons: each message is formatted once
    for p, reason in up.unschedulable:
        if len(out) >= limit:
            break
        message = messages.get(reason)
        if message is None:
            message = messages[reason] = f"pod didn't trigger scale-up: {reason}"
        out.append({"pod": p.key, "reason": "NotTriggerScaleUp", "message": message})
    return out
