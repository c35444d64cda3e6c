"""What packing places pods onto, and what it places: runs of identical nodes (:class:`Bin`), classes of
interchangeable pending pods (:class:`PodClass`) and a group's room for new nodes (:class:`Room`).

The bottom of the core's scheduling rules, which go one way: ``bins`` <- ``scheduling`` (may this pod go on this
node) <- ``spread`` (placement by topology domain) <- ``packing`` (first fit over the bins).
"""

from __future__ import annotations

from autoscaler.core.fit import NodeState
from autoscaler.core.model import Group
from autoscaler.core.podspec import PodShape

EXISTING, TAINTED, UPCOMING, NEW = "existing", "tainted", "upcoming", "new"


class PodClass:
    """Pending pods that are interchangeable for placement: same shape, selector matches, priority and gang."""

    __slots__ = (
        "shape",
        "matched",
        "priority",
        "gang",
        "pods",
        "placed",
        "size",
        "may_scale_up",
        "notes",
        "topology",
    )

    def __init__(self, shape: PodShape, matched: frozenset, priority: int, gang: str | None):
        self.shape = shape
        self.matched = matched
        self.priority = priority
        self.gang = gang
        self.pods: list = []
        self.placed = 0
        self.size = 0.0  # dominant share of the largest node, for the decreasing order
        self.may_scale_up = True
        self.notes: dict[str, tuple[str, str]] = {}  # group -> (kind, why it could not take these pods)
        self.topology = shape.topology  # placed pod by pod by topology domain (spread.py)


class Bin:
    __slots__ = (
        "kind",
        "group",
        "region",
        "node",
        "labels",
        "taints",
        "tmpl",
        "st",
        "count",
        "history",
        "zone",
    )

    def __init__(self, kind, group, region, node, labels, taints, tmpl, st, count=1, zone=None):
        self.kind = kind
        self.group: Group | None = group
        self.region: str = region
        self.node: str | None = node
        self.labels: dict = labels
        self.taints: tuple = taints
        self.tmpl: int = tmpl
        self.st: NodeState = st
        self.count: int = count
        self.history: list = []  # (PodClass, pods per node)
        self.zone: str | None = zone  # None for new and upcoming nodes of a group with several zones

    def clone(self, count: int) -> Bin:
        b = Bin(
            self.kind,
            self.group,
            self.region,
            self.node,
            self.labels,
            self.taints,
            self.tmpl,
            self.st.copy(),
            count,
            self.zone,
        )
        b.history = list(self.history)
        return b


class Room:
    """A group's room for new nodes in this plan, and the template its new and launching nodes are made from."""

    __slots__ = ("group", "region_idx", "headroom", "new", "blocked", "tmpl", "st")

    def __init__(
        self, group: Group, region_idx: int, headroom: int, blocked: str | None, tmpl: int, st: NodeState
    ):
        self.group = group
        self.region_idx = region_idx
        self.headroom = headroom  # max minus the (corrected) desired size
        self.new = 0
        self.blocked = blocked  # why the group may not grow now (back-off), None when it may
        self.tmpl = tmpl
        self.st = st  # an empty new node: allocatable and ports less the DaemonSets', their pods counted

    def node(self, kind: str, count: int = 1, zone: str | None = None) -> Bin:
        """``count`` new (or launching) nodes of the group, empty but for their DaemonSet pods; in ``zone`` when
        the plan counts them in one (topology spread), else in the group's only zone or none."""
        g = self.group
        zone = zone if zone is not None else group_zone(g)
        return Bin(kind, g, g.region, None, g.labels, g.taints, self.tmpl, self.st.copy(), count, zone)


STAGES = {EXISTING: 0, TAINTED: 1, UPCOMING: 2, NEW: 3}


def group_zone(g: Group) -> str | None:
    """The zone of a group's new and upcoming nodes: its only zone, else None (the group chooses)."""
    return g.zones[0] if len(g.zones) == 1 else None


def template_zones(g: Group) -> tuple[str, ...]:
    """The zones a node of the group's template may come up in, when its labels cannot say which: a group over
    several zones picks each instance's zone itself (its template has no zone label)."""
    return g.zones if len(g.zones) > 1 else ()
