"""Topology spread over zones (DoNotSchedule): pods go one at a time to the zone with the fewest matching pods.

The pod goes to the zones of existing nodes it may use and of the groups that may grow for it; the zones counted
for the skew (domains) also include those of nodes it may not use, as the constraint's nodeTaintsPolicy (default
Ignore) and nodeAffinityPolicy (default Honor) say, and fewer domains than minDomains make the minimum 0.
A new node opened for a zone-spread pod is counted in that zone: the Auto Scaling group balances new instances
over its zones the same way (docs/planner.md, "Topology spread").
"""

from __future__ import annotations

from autoscaler.core.fit import static_reason
from autoscaler.core.packing import Packer, PodClass
from autoscaler.core.selectors import untolerated


def _domains(packer: Packer, cls: PodClass, region: str | None, allow_new: bool) -> set[str]:
    """The zones the pod may go to: of existing nodes it may use, and of the groups that may grow for it."""
    zones = set()
    for b in packer.bins:
        usable = b.zone and (region is None or b.region == region)
        if usable and packer.static(cls.shape, b.labels, b.taints, b.tmpl, b.node) is None:
            zones.add(b.zone)
    if allow_new:
        for room, _ in packer.group_order(cls):
            if (
                not room.blocked
                and room.headroom > room.new
                and (region is None or room.group.region == region)
            ):
                zones.update(room.group.zones)
    return zones


def _counted(packer: Packer, cls: PodClass, region: str | None, taints: bool, affinity: bool) -> set[str]:
    """The zones Kubernetes counts for one constraint: of every node, honouring the node's taints and the pod's
    node selector and affinity only as the constraint's nodeTaintsPolicy and nodeAffinityPolicy say (by default
    taints are ignored: a zone of tainted nodes only still holds the minimum down)."""
    zones = set()
    seen: dict[int, bool] = {}  # template -> admitted
    shape = cls.shape
    for b in packer.bins:
        if not b.zone or b.zone in zones or (region is not None and b.region != region):
            continue
        node_taints = b.taints if taints else ()
        if not affinity:
            ok = untolerated(shape.tolerations, node_taints) is None
        elif shape.by_name:
            ok = static_reason(shape, b.labels, node_taints, b.node) is None
        else:
            ok = seen.get(b.tmpl)
            if ok is None:
                ok = seen[b.tmpl] = static_reason(shape, b.labels, node_taints, None) is None
        if ok:
            zones.add(b.zone)
    return zones


def place_spread(packer: Packer, cls: PodClass, n: int, region: str | None, allow_new: bool) -> int:
    zones = _domains(packer, cls, region, allow_new)
    if not zones:
        cls.notes.setdefault("*spread", ("static", "no zone offers a node it may use"))
        return 0
    constraints = cls.shape.spread_zone
    opts = cls.shape.spread_zone_opts
    counts = [
        {z: 0 for z in zones | _counted(packer, cls, region, taints, affinity)}
        for taints, affinity, _ in opts
    ]
    for b in packer.bins:
        for i, (_, sel) in enumerate(constraints):
            if b.zone in counts[i]:
                counts[i][b.zone] += b.st.sel_counts.get(sel, 0) * b.count
    placed = 0
    full: set[str] = set()
    while placed < n:
        # fewer domains than minDomains: the global minimum counts as 0
        lows = [min(c.values()) if len(c) >= opts[i][2] else 0 for i, c in enumerate(counts)]
        order = sorted(zones - full, key=lambda z: (counts[0][z], z))
        done = False
        for z in order:
            if any(
                counts[i][z] + (1 if sel in cls.matched else 0) - lows[i] > skew
                for i, (skew, sel) in enumerate(constraints)
            ):
                continue
            got = packer.place_existing(cls, 1, region, zone=z)
            if not got and allow_new:
                got = packer.place_new(cls, 1, region, zone=z)
            if not got:
                full.add(z)
                continue
            for i, (_, sel) in enumerate(constraints):
                if sel in cls.matched:
                    counts[i][z] += 1
            placed += 1
            done = True
            break
        if not done:
            if placed < n:
                cls.notes.setdefault(
                    "*spread",
                    ("max", f"topology spread over zones (maxSkew {constraints[0][0]}) allows no more pods"),
                )
            break
    return placed
