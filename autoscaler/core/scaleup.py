"""Scale-up: place every pending pod on free room, re-usable and upcoming nodes, then on new nodes of all groups.

Pods are grouped into classes (same shape, selector matches, priority and gang); classes are packed First-Fit
Decreasing by their dominant share of the largest node, gangs all-or-nothing within one region.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autoscaler.core.bins import (
    EXISTING,
    NEW,
    TAINTED,
    UPCOMING,
    Bin,
    PodClass,
    Room,
    group_zone,
    template_zones,
)
from autoscaler.core.config import PlannerConfig
from autoscaler.core.failures import GroupStatus, gone_instances
from autoscaler.core.fit import NodeState, matching, selector_keys
from autoscaler.core.model import Group, Pod, Snapshot
from autoscaler.core.names import HOSTNAME_KEY, TO_BE_DELETED_TAINTS, ZONE_KEY
from autoscaler.core.nodestate import lifecycle
from autoscaler.core.packing import Packer
from autoscaler.core.reasons import nodes_summary, why_unplaced
from autoscaler.core.scheduling import Scheduler

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass
class ScaleUp:
    new_nodes: dict[str, int]  # group -> new nodes
    placements: dict[str, str]  # pod key -> node name, "upcoming:<group>:<i>" or "new:<group>:<i>"
    placed_on: dict[str, int]  # existing node name -> pods planned onto it
    reused: list[str]  # to-be-deleted nodes that pending pods will use (untaint)
    unschedulable: list[tuple[Pod, str]]
    scale_up_pods: list[tuple[Pod, str, str]]  # (pod, group, kind upcoming|new)
    classes: int = 0
    pending: int = 0
    upcoming_used: dict[str, int] = field(default_factory=dict)
    lifecycle: dict[str, tuple[str, str]] = field(default_factory=dict)  # node -> nodestate.lifecycle()
    starting_spare: dict[str, int] = field(
        default_factory=dict
    )  # group -> starting nodes left empty (warm pool)


def pending_pods(snap: Snapshot) -> list[Pod]:
    """Pods to place. A pod nominated onto a node (it preempted pods there) waits for that node: it is counted
    on it, like a bound pod, and nothing is launched for it."""
    return [
        p
        for p in snap.pods
        if p.phase == "Pending" and not p.node_name and not p.nominated and not p.daemonset and not p.mirror
    ]


def build_classes(pods: list[Pod], keys: list, cutoff: int) -> dict:
    classes: dict = {}
    no_match = frozenset()
    for p in pods:
        matched = matching(keys, p.namespace, p.labels) if keys else no_match
        k = (p.shape, matched, p.priority, p.gang)
        cls = classes.get(k)
        if cls is None:
            cls = classes[k] = PodClass(p.shape, matched, p.priority, p.gang)
            cls.may_scale_up = p.priority >= cutoff
        cls.pods.append(p)
    return classes


def _node_bins(
    snap: Snapshot,
    sched: Scheduler,
    rooms: dict[str, Room],
    bound: dict[str, list[Pod]],
    keys: list,
    config: PlannerConfig,
    lives: dict[str, tuple[str, str]],
) -> list[Bin]:
    """Existing nodes as bins: usable ones with their own labels, taints and free room; a group's node that is
    still starting (nodestate.lifecycle) as upcoming capacity shaped like its group's template, less the pods
    already bound to it (cluster-autoscaler counts such nodes as upcoming: clusterstate ``GetUpcomingNodes``)."""
    out_existing, out_tainted, out_starting = [], [], []
    anti_keys = bool(keys)
    groups = {g.name: g for g in snap.groups}
    gone = gone_instances(snap)
    for n in snap.nodes:
        if n.instance_id in gone:
            continue  # its instance is terminating or terminated (e.g. a spot interruption): the node goes away
        g = groups.get(n.group) if n.group else None
        life = lifecycle(n, g, snap.now, config)
        lives[n.name] = life
        kind = life[0]
        if kind == "starting":
            st = rooms[g.name].st.copy()  # the template's DaemonSet pods included
            for p in bound.get(n.name, ()):
                if not p.daemonset:  # the template already holds the DaemonSets' room and their pods
                    st.add(p.shape, matching(keys, p.namespace, p.labels) if anti_keys else frozenset(), 1)
            labels = dict(g.labels)
            zone = n.zone or group_zone(g)
            if zone is not None:
                labels[ZONE_KEY] = zone  # registered: its zone is known
            tmpl = sched.template_id(labels, g.taints, () if zone is not None else template_zones(g))
            if HOSTNAME_KEY in n.labels:
                labels[HOSTNAME_KEY] = n.labels[HOSTNAME_KEY]
            b = Bin(UPCOMING, g, g.region, n.name, labels, g.taints, tmpl, st, zone=zone)
            out_starting.append(b)
            continue
        if kind != "ready":
            continue
        tainted = any(t[0] in TO_BE_DELETED_TAINTS for t in n.taints)
        taints = tuple(t for t in n.taints if t[0] not in TO_BE_DELETED_TAINTS) if tainted else n.taints
        if n.unschedulable:
            taints = taints + (UNSCHEDULABLE_TAINT,)
        st = NodeState(dict(n.allocatable))
        _account(st, bound.get(n.name, ()), keys)
        region = g.region if g else (n.region or "")
        b = Bin(
            TAINTED if tainted else EXISTING,
            g,
            region,
            n.name,
            n.labels,
            taints,
            sched.template_id({k: v for k, v in n.labels.items() if k != HOSTNAME_KEY}, taints),
            st,
            zone=n.zone,
        )
        (out_tainted if tainted else out_existing).append(b)
    return out_existing + out_tainted + out_starting


_NONE: frozenset = frozenset()


def _account(st: NodeState, pods: list[Pod], keys: list) -> None:
    """Add the node's pods to ``st``: the pods of one shape (and selector matches) at once, as a node's pods are
    mostly one Job's or ReplicaSet's (the same sums and counts as one by one, in the same order)."""
    if len(pods) == 1:
        p = pods[0]
        st.add(p.shape, matching(keys, p.namespace, p.labels) if keys else _NONE, 1)
        return
    runs: dict = {}
    for p in pods:
        k = (p.shape, matching(keys, p.namespace, p.labels) if keys else _NONE)  # shapes hash by identity
        runs[k] = runs.get(k, 0) + 1
    for (shape, matched), count in runs.items():
        st.add(shape, matched, count)


def _template_state(g: Group, keys: list) -> NodeState:
    """An empty new node of the group: its allocatable and host ports (the DaemonSets' already taken out) and
    its DaemonSet pods, counted for the selectors and anti-affinity terms of this plan."""
    st = NodeState(dict(g.allocatable), ports=set(g.ports))
    for shape, namespace, labels in g.daemonsets:
        st.count(shape, matching(keys, namespace, labels) if keys else frozenset(), 1)
    return st


def scale_up(
    snap: Snapshot, config: PlannerConfig, statuses: dict[str, GroupStatus], upcoming: dict[str, int]
) -> ScaleUp:
    pending = pending_pods(snap)
    bound: dict[str, list[Pod]] = {}
    expendable: dict[str, list[Pod]] = {}
    held_shapes: dict = {}  # the shapes of the pods that hold room, each once, in the order first met
    running: dict[str, list[Pod]] = {}  # gang -> its members bound to nodes (above the cut-off)
    cutoff = config.priority_cutoff
    for p in snap.pods:  # one walk over every pod: a pass at 50,000 pods pays for each walk
        where = p.node_name or p.nominated
        if where and not p.terminated:
            # pods below the priority cut-off are preempted by any pod above it: they hold no room for those
            # (cluster-autoscaler: FilterOutExpendablePods before building its cluster snapshot); they are added
            # back before the pods below the cut-off themselves are placed
            if p.priority < cutoff:
                expendable.setdefault(where, []).append(p)
            else:
                bound.setdefault(where, []).append(p)
                if p.gang is not None:
                    running.setdefault(p.gang, []).append(p)
            held_shapes[p.shape] = None
    keys_set: dict = {}
    shapes = {p.shape for p in pending}
    for shape in shapes:
        for k in selector_keys(shape):
            keys_set[k] = None
    anti_other = set()  # anti-affinity on other keys than the hostname, of any pod: its targets go by domain
    for shape in shapes:
        anti_other.update(sel for _, sel in shape.anti_other)
    holders = list(held_shapes)  # shapes hash by identity: a Job's pods share one
    holders += [shape for g in snap.groups for shape, _, _ in g.daemonsets]  # the DaemonSet pods of new nodes
    for shape in holders:
        for k in shape.anti_affinity:
            keys_set[k] = None
        for _, k in shape.anti_other:
            keys_set[k] = None
            anti_other.add(k)
    keys = list(keys_set)
    region_idx = {r: i for i, r in enumerate(snap.regions)}
    sched = Scheduler()
    rooms = [
        Room(
            g,
            region_idx.get(g.region, len(region_idx)),
            g.max - statuses[g.name].desired,
            statuses[g.name].blocked,
            sched.template_id(g.labels, g.taints, template_zones(g)),
            _template_state(g, keys),
        )
        for g in snap.groups
    ]
    by_group = {room.group.name: room for room in rooms}
    lives: dict[str, tuple[str, str]] = {}
    bins = _node_bins(snap, sched, by_group, bound, keys, config, lives)
    for g in snap.groups:
        if upcoming.get(g.name, 0) > 0:
            bins.append(by_group[g.name].node(UPCOMING, upcoming[g.name]))
    has_site = any(b.region == "" for b in bins)
    classes = build_classes(pending, keys, config.priority_cutoff)
    for cls in classes.values():
        if not cls.topology and cls.matched & anti_other:
            cls.topology = True  # a pod's anti-affinity on a zone or other key forbids it some domains
    packer = Packer(sched, rooms, bins, config.max_new_nodes_per_loop, _floor(classes.values()))
    _sizes(classes.values(), snap)
    units = _units(classes.values())
    result = ScaleUp({}, {}, {}, [], [], [], classes=len(classes), pending=len(pending), lifecycle=lives)
    gang_notes: dict[str, str] = {}
    by_node = {b.node: b for b in bins if b.node is not None}
    packer.count_demand(
        [cls for unit in units for cls in unit if cls.may_scale_up and not cls.shape.unsupported]
    )
    for unit in units:
        if expendable and not unit[0].may_scale_up:
            _occupy(expendable, by_node, keys)
            expendable = {}
        if unit[0].gang is not None:
            reason = _place_gang(unit, packer, snap, running.get(unit[0].gang, []), config, has_site)
            if reason:
                gang_notes[unit[0].gang] = reason
        elif not unit[0].shape.unsupported:
            cls = unit[0]
            cls.placed = packer.place(cls, len(cls.pods), None, cls.may_scale_up)
        if unit[0].may_scale_up and not unit[0].shape.unsupported:
            packer.count_demand(unit, -1)  # placed or not, these pods are no longer to come
    _collect(result, packer, classes.values(), config, gang_notes)
    for b in bins:
        if (
            b.kind == UPCOMING
            and b.node is not None
            and not b.history
            and not any(not p.daemonset and not p.mirror for p in bound.get(b.node, ()))
        ):
            result.starting_spare[b.group.name] = result.starting_spare.get(b.group.name, 0) + 1
    return result


def _occupy(pods_by_node: dict[str, list[Pod]], by_node: dict[str, Bin], keys: list) -> None:
    """Count the expendable pods on their nodes again (for placing the pods below the cut-off)."""
    for name, pods in pods_by_node.items():
        b = by_node.get(name)
        if b is not None:
            for p in pods:
                b.st.add(p.shape, matching(keys, p.namespace, p.labels) if keys else frozenset(), 1)


def _floor(classes) -> dict[str, int]:
    """Per resource that every class requests, the smallest request: a node with less free fits no pod."""
    floor: dict[str, int] | None = None
    for cls in classes:
        req = dict(cls.shape.requests)
        floor = req if floor is None else {r: min(q, req[r]) for r, q in floor.items() if r in req}
    return floor or {}


def _sizes(classes, snap: Snapshot) -> None:
    largest: dict[str, int] = {}
    for alloc in [g.allocatable for g in snap.groups] + [n.allocatable for n in snap.nodes]:
        for r, q in alloc.items():
            if q > largest.get(r, 0):
                largest[r] = q
    for cls in classes:
        cls.size = max((q / largest[r] if largest.get(r) else 2.0 for r, q in cls.shape.requests), default=0)


def _units(classes) -> list[list[PodClass]]:
    """Gangs (all their classes together) and single classes, in placing order: priority, gangs, size."""
    gangs: dict[str, list[PodClass]] = {}
    units = []
    for cls in classes:
        if cls.gang is None:
            units.append([cls])
        else:
            gangs.setdefault(cls.gang, []).append(cls)
    for members in gangs.values():
        members.sort(key=lambda c: -c.size)
        units.append(members)

    def key(unit):
        first = unit[0]
        return (not first.may_scale_up, -first.priority, first.gang is None, -first.size, first.pods[0].key)

    units.sort(key=key)
    return units


def _place_gang(
    members: list[PodClass], packer: Packer, snap: Snapshot, running: list[Pod], config, has_site: bool
) -> str | None:
    """All members of a gang in one region, or none; the reason when none. ``running``: its bound members."""
    gang = members[0].gang
    count = sum(len(c.pods) for c in members)
    for c in members:
        if c.shape.unsupported:  # one member that cannot be placed anywhere holds the whole gang
            return f"gang {gang}: pod {c.pods[0].key}: {c.shape.unsupported[0]}"
    size = max((p.gang_size or 0 for c in members for p in c.pods), default=0)
    if size and count + len(running) < size:
        return f"gang {gang} has {count + len(running)} of its {size} pods; waiting for the rest"
    nodes = {n.name: n for n in snap.nodes} if running else {}
    groups = {g.name: g for g in snap.groups}
    locked = set()
    for p in running:
        n = nodes.get(p.node_name or p.nominated)
        if n is not None:
            locked.add(groups[n.group].region if n.group in groups else n.region or "")
    regions = sorted(locked)[:1] if locked else ([""] if has_site else []) + list(snap.regions)
    tried = []
    may_grow = all(c.may_scale_up for c in members)
    for region in regions:
        for c in members:
            c.notes = {}
        packer.begin()
        failed = None
        for c in members:
            if packer.place(c, len(c.pods), region, may_grow) < len(c.pods):
                failed = c
                break
        if failed is None:
            packer.commit()
            for c in members:
                c.placed = len(c.pods)
            return None
        packer.rollback()
        in_region = [room for room in packer.rooms if room.group.region == region]
        why = why_unplaced(failed, in_region, config.priority_cutoff) if in_region else "no room on its nodes"
        tried.append(f"{region or 'on-premises nodes'}: {why}")
    where = "; ".join(tried) if tried else "no region to try"
    return f"gang {gang} ({count} pods) must run in one region; {where}"


def _collect(result: ScaleUp, packer: Packer, classes, config: PlannerConfig, gang_notes) -> None:
    cursor = {id(c): 0 for c in classes}
    serial: dict[str, int] = {}
    for room in packer.rooms:
        if room.new:
            result.new_nodes[room.group.name] = room.new
    bins = packer.bins
    for b in bins:
        if not b.history:
            continue
        if b.kind in (EXISTING, TAINTED):
            names = [b.node]
            if b.kind == TAINTED:
                result.reused.append(b.node)
        elif b.node is not None:
            names = [b.node]  # a registered node of the group that is still starting
        else:
            prefix = "new" if b.kind == NEW else "upcoming"
            key = f"{prefix}:{b.group.name}"
            start = serial.get(key, 0)
            serial[key] = start + b.count
            names = [f"{key}:{i}" for i in range(start, start + b.count)]
            if b.kind == UPCOMING:
                result.upcoming_used[b.group.name] = result.upcoming_used.get(b.group.name, 0) + b.count
        for name in names:
            total = 0
            for cls, k in b.history:
                i = cursor[id(cls)]
                for p in cls.pods[i : i + k]:
                    result.placements[p.key] = name
                    if b.kind in (NEW, UPCOMING):
                        result.scale_up_pods.append((p, b.group.name, b.kind))
                cursor[id(cls)] = i + k
                total += k
            if b.kind in (EXISTING, TAINTED):
                result.placed_on[name] = result.placed_on.get(name, 0) + total
    for cls in classes:
        if cls.placed < len(cls.pods):
            # a gang's member that fits nowhere gets its own reason (kube-scheduler's words for it), the others
            # the gang's
            reason = gang_notes.get(cls.gang) if cls.gang and not cls.shape.unsupported else None
            reason = reason or why_unplaced(
                cls,
                packer.rooms,
                config.priority_cutoff,
                lambda admitted=False, cls=cls: nodes_summary(cls, bins, packer.sched, admitted),
            )
            for p in cls.pods[cls.placed :]:
                result.unschedulable.append((p, reason))
