"""Why pods fit nowhere, in words a researcher understands."""

from __future__ import annotations

from autoscaler.core.bins import PodClass, Room
from autoscaler.core.fit import capacity_reason
from autoscaler.core.quantity import format_amount


def _size_reason(cls: PodClass, rooms: list[Room], matching: bool) -> str:
    """``needs 16 nvidia.com/gpu; the largest node type offers 8`` for the resource that fits worst."""
    which = "matching node type" if matching else "node type"
    worst = None
    for r, q in cls.shape.requests:
        best = max((room.group.allocatable.get(r, 0) for room in rooms), default=0)
        if best < q and (worst is None or best / q < worst[2] / worst[1]):
            worst = (r, q, best)
    if worst is None:  # each resource fits alone: the combination or a per-node limit does not
        if not rooms:
            return "does not fit on an empty node"
        g = rooms[0].group
        detail = capacity_reason(cls.shape, cls.matched, rooms[0].st) or "does not fit on an empty node"
        if detail.startswith("host port") and g.ports:
            port = detail.split()[2]
            return f"host port {port} is taken by a DaemonSet on every node of group {g.name}"
        if g.daemonsets and detail.startswith("required pod anti-affinity"):
            return f"required pod anti-affinity: every node of group {g.name} runs a matching DaemonSet pod"
        if g.daemonsets and detail.startswith("a pod on the node has required anti-affinity"):
            return (
                f"every node of group {g.name} runs a DaemonSet pod whose required anti-affinity matches it"
            )
        return f"{detail} on an empty node of group {g.name}"
    r, q, best = worst
    if best == 0:
        return f"needs {format_amount(r, q)} {r}; no {which} offers {r}"
    return f"needs {format_amount(r, q)} {r}; the largest {which} offers {format_amount(r, best)}"


def _static_summary(cls: PodClass, notes: dict, rooms: list[Room]) -> str:
    groups = [room.group for room in rooms]
    texts = [notes[g.name][1] for g in groups if g.name in notes]
    if texts and all(t == texts[0] for t in texts):
        t = texts[0]
        if t.startswith("does not match "):
            return "no group matches " + t[len("does not match ") :]
        if t.startswith("has taint "):
            return "every group has taint " + t[len("has taint ") :]
        return t
    big_enough = [g for g in groups if all(g.allocatable.get(r, 0) >= q for r, q in cls.shape.requests)]
    if not big_enough:
        return _size_reason(cls, rooms, matching=False)
    parts = []
    for g in big_enough[:3]:
        parts.append(f"group {g.name} {notes.get(g.name, ('', 'cannot take it'))[1]}")
    more = f" (and {len(big_enough) - 3} more groups)" if len(big_enough) > 3 else ""
    return "; ".join(parts) + more


def nodes_summary(cls: PodClass, bins: list, sched, admitted: bool = False) -> str:
    """Why no existing node takes the pod: the first few distinct reasons, naming a node for each.

    ``admitted``: only the nodes whose labels and taints admit the pod ("" when there are none)."""
    seen: dict[str, str] = {}
    for b in bins:
        if b.node is None:
            continue
        if admitted and sched.static(cls.shape, b.labels, b.taints, b.tmpl, b.node) is not None:
            continue
        why = sched.why_not(cls, b)
        seen.setdefault(why, b.node)
        if len(seen) > 3:
            break
    parts = [f"node {node} {why}" for why, node in list(seen.items())[:3]]
    if admitted:
        return "no room on the nodes it may use: " + "; ".join(parts) if parts else ""
    if not seen:
        return "the cluster has no nodes and no node groups"
    return "no node fits and there are no node groups to grow: " + "; ".join(parts)


def why_unplaced(cls: PodClass, rooms: list[Room], cutoff: int, nodes_reason=None) -> str:
    """The reason the remaining pods of ``cls`` fit on no existing node and no new node of the groups ``rooms``.

    ``nodes_reason``: called for the reason from the existing nodes when there are no groups to grow, and with
    True (only the nodes that admit the pod) when no group could ever take it."""
    if cls.shape.unsupported:
        return cls.shape.unsupported[0]
    if not cls.may_scale_up:
        return f"priority {cls.priority} is below the autoscaler's cut-off {cutoff}; it waits for free room"
    if not rooms:
        return nodes_reason() if nodes_reason else "no node has room and there are no node groups to grow"
    notes = cls.notes
    limited = [text for kind, text in notes.values() if kind in ("blocked", "max", "cap")]
    if limited:
        unique = list(dict.fromkeys(limited))
        more = f" (and {len(unique) - 3} more)" if len(unique) > 3 else ""
        return "no room: " + "; ".join(unique[:3]) + more
    if "*topology" in notes:
        return notes["*topology"][1]
    sized = [room for room in rooms if notes.get(room.group.name, ("",))[0] == "size"]
    if sized:
        return _size_reason(cls, sized, matching=len(sized) < len(rooms))
    summary = _static_summary(cls, notes, rooms)
    if nodes_reason and all(notes.get(room.group.name, ("",))[0] == "static" for room in rooms):
        # no group can ever take it: say why the existing nodes it may use do not (e.g. the node it is pinned to)
        full = nodes_reason(True)
        if full:
            summary = f"{summary}; {full}"
    return summary
