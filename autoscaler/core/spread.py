"""Placement by topology domain: DoNotSchedule topology spread on any key, required pod affinity and pod
anti-affinity on any key other than the hostname (the hostname's anti-affinity is a per-node rule, in
``fit.capacity``). Such pods go one at a time, each onto the first node that the scheduler's filters admit:

- PodTopologySpread (k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread/filtering.go): a
  constraint counts the matching pods on the nodes that pass the pod's node affinity and node selector
  (``nodeAffinityPolicy``, default Honor) and, with ``nodeTaintsPolicy: Honor``, its tolerations; a node without
  the topology key fails; the pod may go to a domain when ``count + 1 - minimum <= maxSkew``, where the minimum
  is over the counted domains, taken as 0 while there are fewer than ``minDomains`` of them. For the zone key the
  zones of the groups that may grow for the pod are domains too (a new node is counted in the zone it is
  planned in; the Auto Scaling group balances its zones the same way).
- InterPodAffinity (plugins/interpodaffinity/filtering.go): an affinity term needs a pod matching its selector in
  the node's domain, unless no pod anywhere matches and the pod matches its own term (the first pod of a
  group); an anti-affinity term forbids a domain holding a matching pod, and a pod whose anti-affinity term
  matches this pod forbids its domain to it (symmetry).

Among the nodes that pass, the one in the domain with the fewest matching pods of the pod's non-hostname spread
constraints wins (the scheduler's spread score), then first fit; a new node is opened (in the zone with the
fewest, for zone spread) only when no existing, upcoming or already opened node passes, as cluster-autoscaler
adds a node only for a pod that fits nowhere.
"""

from __future__ import annotations

from typing import Protocol

from autoscaler.core.bins import NEW, Bin, PodClass, Room, group_zone
from autoscaler.core.fit import NodeState
from autoscaler.core.names import ZONE_KEY
from autoscaler.core.scheduling import PackerView, Scheduler


class Placer(PackerView, Protocol):
    """What topology placement uses of the packer (``packing.Packer``), which calls it for topology pods."""

    sched: Scheduler
    order: list[tuple[int, int]]
    runs: dict[tuple[int, int], list[Bin]]
    cap_left: int

    def fill(self, run: list[Bin], i: int, b: Bin, cls: PodClass, c: int, n: int) -> tuple[int, int]: ...
    def open_nodes(
        self, room: Room, cls: PodClass, take: int, k: int, n: int, zone: str | None = None
    ) -> None: ...
    def note_full(self, cls: PodClass, room: Room) -> None: ...


def _place_one(packer: Placer, cls: PodClass, region: str | None, allow_new: bool, why: list) -> bool:
    counts = packer.sched.topology(packer, cls, region, allow_new)
    best = None
    for key in packer.order:
        run = packer.runs[key]
        for i, b in enumerate(run):
            if region is not None and b.region != region:
                continue
            if packer.sched.room(cls, b) <= 0:
                continue
            reason = counts.admits(cls, b)
            if reason is not None:
                why.append(reason)
                continue
            r = counts.rank(b)
            if best is None or r < best[0]:
                best = (r, run, i, b)
                if r == 0:
                    break
        if best is not None and best[0] == 0:
            break
    if best is not None:
        _, run, i, b = best
        packer.fill(run, i, b, cls, 1, 1)
        return True
    if not allow_new:
        return False
    shape = cls.shape
    # a new node is counted in a zone only when a constraint looks at zones; else the group chooses (as it does)
    zonal = (
        any(c[0] == ZONE_KEY for c in shape.spread)
        or any(key == ZONE_KEY for key, _ in shape.pod_affinity + shape.anti_other)
        or any(key == ZONE_KEY for key, _ in counts.forbidden)
    )
    options = []
    for room, k in packer.group_order(cls, 1):
        g = room.group
        if region is not None and g.region != region:
            continue
        if room.blocked:
            cls.notes.setdefault(g.name, ("blocked", room.blocked))
            continue
        if min(room.headroom - room.new, packer.cap_left) <= 0:
            packer.note_full(cls, room)
            continue
        for z in g.zones if zonal and len(g.zones) > 1 else [group_zone(g)]:
            probe = Bin(NEW, g, g.region, None, g.labels, g.taints, room.tmpl, packer_state(g), 1, z)
            reason = counts.admits(cls, probe)
            if reason is None:
                options.append((counts.rank(probe), len(options), room, k, z))
            else:
                why.append(reason)
    if not options:
        return False
    _, _, room, k, z = min(options)
    packer.open_nodes(room, cls, 1, k, 1, z)
    return True


def packer_state(g) -> NodeState:
    return NodeState(dict(g.allocatable), ports=set(g.ports))


def place_topology(packer: Placer, cls: PodClass, n: int, region: str | None, allow_new: bool) -> int:
    """Up to ``n`` pods of ``cls``, one at a time, by the topology rules above."""
    placed = 0
    why: list[str] = []
    while placed < n:
        why.clear()
        if not _place_one(packer, cls, region, allow_new, why):
            break
        placed += 1
    if placed < n and why:
        cls.notes.setdefault("*topology", ("topology", why[0]))
    return placed
