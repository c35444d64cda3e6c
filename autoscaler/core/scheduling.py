"""One home for the scheduler's rules: may this pod go on this node, and what does it take?

A :class:`Scheduler` per plan answers it for a pod class and a node, whatever the node is (an existing node, a
starting or launching node, a new node of a group's template: all ``bins.Bin``), with the rules of the
kube-scheduler's filter plugins:

- :meth:`Scheduler.static`: what depends only on the node's labels, taints and name (NodeAffinity with the
  nodeSelector, TaintToleration, NodeUnschedulable), cached per (pod shape, node template);
- :meth:`Scheduler.room`: how many more pods of the class the node takes (NodeResourcesFit, NodePorts,
  InterPodAffinity on the hostname; ``fit.capacity``), 0 when ``static`` says no;
- :meth:`Scheduler.topology`: the counts per topology domain kept beside the nodes (PodTopologySpread,
  InterPodAffinity on other keys), whose :meth:`Topology.admits` says whether a node's domain takes one more pod;
- :meth:`Scheduler.why_not`: the reason when the answer is no, in words a researcher understands.

Packing (``packing.py``), topology placement (``spread.py``) and the reasons (``reasons.py``) ask this object;
packing's first-fit loop alone calls its primitive ``fit.capacity`` directly, after ``static``, to keep the
bulk path fast. The plan's snapshot stays with ``scaleup.py``, which builds the nodes once.
"""

from __future__ import annotations

from typing import Protocol

from autoscaler.core.bins import Bin, PodClass, Room
from autoscaler.core.fit import NodeState, capacity, capacity_reason, static_reason
from autoscaler.core.names import HOSTNAME_KEY, ZONE_KEY
from autoscaler.core.podspec import PodShape
from autoscaler.core.selectors import untolerated


class PackerView(Protocol):
    """What the topology counts read of the plan's nodes (``packing.Packer``, which builds on this module)."""

    @property
    def bins(self) -> list[Bin]: ...
    def group_order(self, cls: PodClass, n: int = 1) -> list[tuple[Room, int]]: ...


class Scheduler:
    """The scheduler's rules for one plan, with their caches."""

    def __init__(self) -> None:
        self._static: dict = {}
        self._templates: dict = {}
        self._empty: dict = {}  # template -> (group, an empty new node of it)

    def template_id(self, labels: dict, taints: tuple) -> int:
        """Nodes with the same labels and taints share a template: their static answers are cached together."""
        key = (frozenset(labels.items()), taints)
        return self._templates.setdefault(key, len(self._templates))

    def static(self, shape: PodShape, labels: dict, taints: tuple, tmpl: int, name: str | None) -> str | None:
        """None when the node's labels, taints and name admit the pod, else why not."""
        if name is not None and shape.by_name:
            return static_reason(shape, labels, taints, name)
        key = (shape.static_key, tmpl)
        try:
            return self._static[key]
        except KeyError:
            r = self._static[key] = static_reason(shape, labels, taints, None)
            return r

    def room(self, cls, b) -> int:
        """How many more pods of ``cls`` node ``b`` takes (each node of a run), by every per-node rule."""
        if self.static(cls.shape, b.labels, b.taints, b.tmpl, b.node) is not None:
            return 0
        return capacity(cls.shape, cls.matched, b.st)

    def template_room(self, cls, group, tmpl: int) -> tuple[int, str | None]:
        """(pods per new node of ``group``, why none when 0) for a class."""
        reason = self.static(cls.shape, group.labels, group.taints, tmpl, None)
        if reason is not None:
            return 0, reason
        empty = self._empty.get(tmpl)
        if empty is None or empty[0] is not group:
            empty = self._empty[tmpl] = (group, NodeState(dict(group.allocatable), ports=set(group.ports)))
        return capacity(cls.shape, cls.matched, empty[1]), None  # capacity() only reads the state

    def why_not(self, cls, b) -> str:
        """Why node ``b`` takes no pod of ``cls``."""
        why = self.static(cls.shape, b.labels, b.taints, b.tmpl, b.node)
        if why is None:
            why = capacity_reason(cls.shape, cls.matched, b.st) or "has no room"
        return why

    def topology(self, packer: PackerView, cls: PodClass, region: str | None, allow_new: bool) -> Topology:
        return Topology(packer, cls, region, allow_new)


def domain(b: Bin, key: str):
    """The node's (run's) value of a topology key; None when it has none."""
    if key == HOSTNAME_KEY:
        return ("node", id(b))  # every node is its own domain (a run's nodes: one each, with equal counts)
    if key == ZONE_KEY:
        return b.zone or b.labels.get(ZONE_KEY)
    return b.labels.get(key)


def _eligible(cls: PodClass, b: Bin, taints: bool, affinity: bool, cache: dict) -> bool:
    """Whether the spread constraint counts the node (nodeTaintsPolicy, nodeAffinityPolicy)."""
    shape = cls.shape
    node_taints = b.taints if taints else ()
    if not affinity:
        return untolerated(shape.tolerations, node_taints) is None
    if shape.by_name and b.node is not None:
        return static_reason(shape, b.labels, node_taints, b.node) is None
    key = (b.tmpl, taints)
    ok = cache.get(key)
    if ok is None:
        ok = cache[key] = static_reason(shape, b.labels, node_taints, None) is None
    return ok


class Topology:
    """The topology counts for one pod of ``cls``, from the nodes as they are now: per spread constraint the
    matching pods per counted domain and the minimum; per affinity term the matching pods per domain; the domains
    a running pod's anti-affinity forbids to it."""

    def __init__(self, packer: PackerView, cls: PodClass, region: str | None, allow_new: bool):
        shape = cls.shape
        bins = packer.bins  # the whole cluster's nodes count, wherever the pod may go
        self.bins = bins
        cache: dict = {}
        # spread: per constraint, counts per domain over the counted nodes, and the minimum
        self.spread = []
        for key, skew, sel, taints, affinity, min_domains in shape.spread:
            counts: dict = {}
            nodes = 0
            for b in bins:
                d = domain(b, key)
                if d is None or not _eligible(cls, b, taints, affinity, cache):
                    continue
                counts[d] = counts.get(d, 0) + b.st.sel_counts.get(sel, 0) * (
                    1 if key == HOSTNAME_KEY else b.count
                )
                nodes += b.count if key == HOSTNAME_KEY else 0
            if key == ZONE_KEY and allow_new:
                for room, _ in packer.group_order(cls):
                    g = room.group
                    if (
                        not room.blocked
                        and room.headroom > room.new
                        and (region is None or g.region == region)
                    ):
                        for z in g.zones:
                            counts.setdefault(z, 0)
            n_domains = nodes if key == HOSTNAME_KEY else len(counts)
            low = min(counts.values()) if counts and n_domains >= min_domains else 0
            self.spread.append((key, skew, sel, counts, low))
        # affinity and anti-affinity: matching pods per (key, domain) over every node
        terms = {key for key, _ in shape.pod_affinity} | {key for key, _ in shape.anti_other}
        self.pods: dict = {}  # (key, domain, sel) -> matching pods
        self.anyone: dict = {}  # sel -> matching pods anywhere
        self.forbidden: set = set()  # (key, domain) held by a pod whose anti-affinity matches this pod
        sels = {sel for _, sel in shape.pod_affinity} | {sel for _, sel in shape.anti_other}
        for b in bins:
            for sel in sels:
                n = b.st.sel_counts.get(sel, 0) * b.count
                if n:
                    self.anyone[sel] = self.anyone.get(sel, 0) + n
                    for key in terms:
                        d = domain(b, key)
                        if d is not None:
                            self.pods[(key, d, sel)] = self.pods.get((key, d, sel), 0) + n
            for term, n in b.st.anti_held.items():
                if n and isinstance(term[0], str) and term[1] in cls.matched:
                    d = domain(b, term[0])
                    if d is not None:
                        self.forbidden.add((term[0], d))

    def admits(self, cls: PodClass, b: Bin) -> str | None:
        """None when a pod of ``cls`` may go to node ``b`` as far as the topology goes, else why not."""
        shape = cls.shape
        for key, skew, sel, counts, low in self.spread:
            d = domain(b, key)
            if d is None:
                return f"has no {key} label (topology spread)"
            count = b.st.sel_counts.get(sel, 0) if key == HOSTNAME_KEY else counts.get(d, 0)
            if count + (1 if sel in cls.matched else 0) - low > skew:
                return f"topology spread on {key} (maxSkew {skew}) allows no more pods there"
        for key, sel in shape.pod_affinity:
            d = domain(b, key)
            if self.pods.get((key, d, sel)) if d is not None else False:
                continue
            if not self.anyone.get(sel) and sel in cls.matched:
                continue  # the first pod of a group that has affinity to itself
            return f"required pod affinity on {key}: no matching pod in its domain"
        for key, sel in shape.anti_other:
            d = domain(b, key)
            if d is not None and self.pods.get((key, d, sel)):
                return f"required pod anti-affinity on {key}: a matching pod runs in its domain"
        for key, d in self.forbidden:
            if domain(b, key) == d:
                return f"a pod in its {key} domain has required anti-affinity against this pod"
        return None

    def rank(self, b: Bin) -> int:
        """Matching pods in the node's domains of the non-hostname spread constraints (fewer is better)."""
        return sum(
            counts.get(domain(b, key), 0) for key, _, _, counts, _ in self.spread if key != HOSTNAME_KEY
        )
