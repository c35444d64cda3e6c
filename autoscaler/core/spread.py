"""Placement by topology domain: DoNotSchedule topology spread on any key, required pod affinity and pod
anti-affinity on any key other than the hostname (the hostname's anti-affinity is a per-node rule, in
``fit.capacity``). Such pods go one at a time, each onto the first node that the scheduler's filters admit
(``scheduling.Topology``, kube-scheduler's PodTopologySpread and InterPodAffinity).

Among the nodes that pass, the one in the domain with the fewest matching pods of the pod's non-hostname spread
constraints wins (the scheduler's spread score), then first fit; a new node is opened (in the zone with the
fewest, for zone spread) only when no existing, upcoming or already opened node passes, as cluster-autoscaler
adds a node only for a pod that fits nowhere. A new node in a zone where no node is yet counts that zone as a
domain from then on (it is one once the node registers).

The functions here only choose: packing hands them the plan's nodes and the groups that may grow, and places the
pod where they say (``packing.Packer``), so the data goes one way, down.
"""

from __future__ import annotations

from collections.abc import Iterable

from autoscaler.core.bins import NEW, Bin, PodClass, Room, group_zone
from autoscaler.core.names import ZONE_KEY
from autoscaler.core.scheduling import Scheduler, Topology


def best_existing(
    sched: Scheduler, topo: Topology, cls: PodClass, runs: Iterable[list[Bin]], region: str | None, why: list
) -> tuple[list[Bin], int, Bin] | None:
    """The node of ``runs`` (in first-fit order) a pod of ``cls`` goes to: (run, index, node), or None."""
    best = None
    for run in runs:
        for i, b in enumerate(run):
            if region is not None and b.region != region:
                continue
            if sched.room(cls, b) <= 0:
                continue
            reason = topo.admits(b)
            if reason is not None:
                why.append(reason)
                continue
            r = topo.rank(b)
            if best is None or r < best[0]:
                best = (r, run, i, b)
                if r == 0:
                    return run, i, b
    return None if best is None else best[1:]


def zonal(topo: Topology) -> bool:
    """Whether a new node must be counted in a zone: a constraint looks at zones (else the group chooses)."""
    shape = topo.cls.shape
    return (
        any(c[0] == ZONE_KEY for c in shape.spread)
        or any(key == ZONE_KEY for key, _ in shape.pod_affinity + shape.anti_other)
        or any(key == ZONE_KEY for key, _ in topo.forbidden)
    )


def best_new(
    topo: Topology, groups: Iterable[tuple[Room, int]], why: list
) -> tuple[Room, int, str | None] | None:
    """Of the groups that may grow (best first, with pods per node), the one a new node for a pod of the class
    comes from, and the zone it is counted in: (room, pods per node, zone), or None."""
    in_zones = zonal(topo)
    options = []
    for room, k in groups:
        g = room.group
        for z in g.zones if in_zones and len(g.zones) > 1 else [group_zone(g)]:
            probe = room.node(NEW, 1, z)
            reason = topo.admits(probe, new=True)
            if reason is None:
                options.append((topo.rank(probe), len(options), room, k, z))
            else:
                why.append(reason)
    if not options:
        return None
    _, _, room, k, z = min(options)
    return room, k, z
