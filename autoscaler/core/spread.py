"""Topology spread over zones (DoNotSchedule): pods go one at a time to the zone with the fewest matching pods.

The zones (domains) are those of existing nodes the pod may use plus those of the groups that may grow for it.
A new node opened for a zone-spread pod is counted in that zone: the Auto Scaling group balances new instances
over its zones the same way (docs/planner.md, "Topology spread").
"""

from __future__ import annotations

from autoscaler.core.fit import static_reason
from autoscaler.core.packing import Packer, PodClass


def _domains(packer: Packer, cls: PodClass, region: str | None, allow_new: bool) -> set[str]:
    zones = set()
    seen: dict[int, bool] = {}  # template -> node selector and affinity admit the pod
    for b in packer.bins:
        if not b.zone or b.zone in zones or (region is not None and b.region != region):
            continue
        # Kubernetes counts the zone of every node the pod's node selector and affinity admit, whatever the
        # node's taints (nodeTaintsPolicy defaults to Ignore): a zone of tainted nodes only still holds the
        # minimum down
        if cls.shape.by_name:
            ok = static_reason(cls.shape, b.labels, (), b.node) is None
        else:
            ok = seen.get(b.tmpl)
            if ok is None:
                ok = seen[b.tmpl] = static_reason(cls.shape, b.labels, (), None) is None
        if ok:
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


def place_spread(packer: Packer, cls: PodClass, n: int, region: str | None, allow_new: bool) -> int:
    zones = _domains(packer, cls, region, allow_new)
    if not zones:
        cls.notes.setdefault("*spread", ("static", "no zone offers a node it may use"))
        return 0
    constraints = cls.shape.spread_zone
    counts = [{z: 0 for z in zones} for _ in constraints]
    for b in packer.bins:
        if b.zone in zones:
            for i, (_, sel) in enumerate(constraints):
                counts[i][b.zone] += b.st.sel_counts.get(sel, 0) * b.count
    placed = 0
    full: set[str] = set()
    while placed < n:
        lows = [min(c.values()) for c in counts]
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
