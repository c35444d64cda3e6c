"""One home for the scheduler's rules: may this pod go on this node, and what does it take?

A :class:`Scheduler` per plan answers it for a pod class and a node, whatever the node is (an existing node, a
starting or launching node, a new node of a group's template: all ``bins.Bin``), with the rules of the
kube-scheduler's filter plugins:

- :meth:`Scheduler.static`: what depends only on the node's labels, taints and name (NodeAffinity with the
  nodeSelector, TaintToleration, NodeUnschedulable), cached per (pod shape, node template); a template of a group
  over several zones has no zone label, and a zone requirement must hold in each zone it may pick;
- :meth:`Scheduler.room`: how many more pods of the class the node takes (NodeResourcesFit, NodePorts,
  InterPodAffinity on the hostname; ``fit.capacity``), 0 when ``static`` says no;
- :class:`Topology`: the counts per topology domain over the plan's nodes (PodTopologySpread, InterPodAffinity on
  any key), whose :meth:`Topology.admits` says whether a node's domain takes one more pod;
- :meth:`Scheduler.why_not`: the reason when the answer is no, in words a researcher understands.

Everything these read is handed down to them (the pod class, the node, the list of nodes): they never call back
into packing. Packing (``packing.py``), topology placement (``spread.py``) and the reasons (``reasons.py``) ask
this module; packing's first-fit loop alone calls its primitive ``fit.capacity`` directly, after ``static``, to
keep the bulk path fast.
"""

from __future__ import annotations

from autoscaler.core.bins import Bin, PodClass, Room
from autoscaler.core.fit import capacity, capacity_reason, static_reason
from autoscaler.core.names import HOSTNAME_KEY, ZONE_KEY
from autoscaler.core.podspec import PodShape
from autoscaler.core.selectors import untolerated


class Scheduler:
    """The scheduler's rules for one plan, with their caches."""

    def __init__(self) -> None:
        self._static: dict = {}
        self._templates: dict = {}
        self._zones: list[tuple[str, ...]] = []  # per template: the zones its nodes may come up in (no label)

    def template_id(self, labels: dict, taints: tuple, zones: tuple[str, ...] = ()) -> int:
        """Nodes with the same labels and taints (and, for a group's template without a zone label, the same
        zones it may pick) share a template: their static answers are cached together."""
        key = (frozenset(labels.items()), taints, zones)
        tmpl = self._templates.get(key)
        if tmpl is None:
            tmpl = self._templates[key] = len(self._zones)
            self._zones.append(zones)
        return tmpl

    def static(self, shape: PodShape, labels: dict, taints: tuple, tmpl: int, name: str | None) -> str | None:
        """None when the node's labels, taints and name admit the pod, else why not."""
        if name is not None and shape.by_name:
            return static_reason(shape, labels, taints, name, self._zones[tmpl])
        key = (shape.static_key, tmpl)
        try:
            return self._static[key]
        except KeyError:
            r = self._static[key] = static_reason(shape, labels, taints, None, self._zones[tmpl])
            return r

    def room(self, cls: PodClass, b: Bin) -> int:
        """How many more pods of ``cls`` node ``b`` takes (each node of a run), by every per-node rule."""
        if self.static(cls.shape, b.labels, b.taints, b.tmpl, b.node) is not None:
            return 0
        return capacity(cls.shape, cls.matched, b.st)

    def template_room(self, cls: PodClass, room: Room) -> tuple[int, str | None]:
        """(pods per new node of ``room``'s group, why none when 0) for a class."""
        g = room.group
        reason = self.static(cls.shape, g.labels, g.taints, room.tmpl, None)
        if reason is not None:
            return 0, reason
        return capacity(cls.shape, cls.matched, room.st), None  # capacity() only reads the state

    def why_not(self, cls: PodClass, b: Bin) -> str:
        """Why node ``b`` takes no pod of ``cls``."""
        why = self.static(cls.shape, b.labels, b.taints, b.tmpl, b.node)
        if why is None:
            why = capacity_reason(cls.shape, cls.matched, b.st) or "has no room"
        return why

    def eligible(self, cls: PodClass, b: Bin, taints: bool, affinity: bool, cache: dict) -> bool:
        """Whether a spread constraint counts the node (nodeTaintsPolicy, nodeAffinityPolicy)."""
        shape = cls.shape
        node_taints = b.taints if taints else ()
        if not affinity:
            return untolerated(shape.tolerations, node_taints) is None
        zones = self._zones[b.tmpl]
        if shape.by_name and b.node is not None:
            return static_reason(shape, b.labels, node_taints, b.node, zones) is None
        key = (b.tmpl, taints)
        ok = cache.get(key)
        if ok is None:
            ok = cache[key] = static_reason(shape, b.labels, node_taints, None, zones) is None
        return ok


def domain(b: Bin, key: str):
    """The node's (run's) value of a topology key; None when it has none."""
    if key == HOSTNAME_KEY:
        return ("node", id(b))  # every node is its own domain (a run's nodes: one each, with equal counts)
    if key == ZONE_KEY:
        return b.zone or b.labels.get(ZONE_KEY)
    return b.labels.get(key)


class Topology:
    """The topology counts for one pod of ``cls`` over ``bins`` (the plan's nodes as they are now: the whole
    cluster's, wherever the pod may go), as kube-scheduler's PreFilter computes them:

    - per DoNotSchedule spread constraint (podtopologyspread/filtering.go, ``calPreFilterState``): the matching
      pods per domain, over the nodes that have every constraint's topology key and pass the pod's node affinity
      (``nodeAffinityPolicy``) and, with ``nodeTaintsPolicy: Honor``, its tolerations; and the minimum over those
      domains (0 while they are fewer than ``minDomains``). Only nodes count: a zone where a group could add a
      node but none exists (or is planned) yet is no domain;
    - for the required affinity terms (interpodaffinity/filtering.go, ``getIncomingAffinityAntiAffinityCounts``):
      per (term's key, domain) the pods that match ALL the terms (``PodShape.affinity_all``);
    - per anti-affinity term, the pods matching it per domain; the domains where a pod's anti-affinity matches
      this pod (``getExistingAntiAffinityCounts``)."""

    def __init__(self, sched: Scheduler, cls: PodClass, bins: list[Bin]):
        shape = cls.shape
        self.cls = cls
        cache: dict = {}
        self.spread = []
        if shape.spread:
            keys = tuple(dict.fromkeys(c[0] for c in shape.spread))
            counted = []  # bins with every constraint's key (nodeLabelsMatchSpreadConstraints), their domains
            for b in bins:
                ds = [domain(b, k) for k in keys]
                if None not in ds:
                    counted.append((b, dict(zip(keys, ds, strict=True))))
            for key, skew, sel, taints, affinity, min_domains in shape.spread:
                counts: dict = {}
                nodes = 0
                for b, ds in counted:
                    if not sched.eligible(cls, b, taints, affinity, cache):
                        continue
                    d = ds[key]
                    if key == HOSTNAME_KEY:
                        counts[d] = counts.get(d, 0) + b.st.sel_counts.get(sel, 0)
                        nodes += b.count
                    else:
                        counts[d] = counts.get(d, 0) + b.st.sel_counts.get(sel, 0) * b.count
                n_domains = nodes if key == HOSTNAME_KEY else len(counts)
                low = min(counts.values()) if counts and n_domains >= min_domains else 0
                self.spread.append((key, skew, sel, counts, low))
        # affinity: pods matching all the terms, per (term's key, domain); anti-affinity: per (key, domain, term)
        conj = shape.affinity_all
        aff_keys = tuple(dict.fromkeys(key for key, _ in shape.pod_affinity))
        self.affinity: dict = {}
        self.anti: dict = {}
        self.forbidden: set = set()  # (key, domain) held by a pod whose anti-affinity matches this pod
        anti_keys = {key for key, _ in shape.anti_other}
        anti_sels = {sel for _, sel in shape.anti_other}
        for b in bins:
            sc = b.st.sel_counts
            if conj is not None:
                n = sc.get(conj, 0) * b.count
                if n:
                    for key in aff_keys:
                        d = domain(b, key)
                        if d is not None:
                            self.affinity[(key, d)] = self.affinity.get((key, d), 0) + n
            for sel in anti_sels:
                n = sc.get(sel, 0) * b.count
                if n:
                    for key in anti_keys:
                        d = domain(b, key)
                        if d is not None:
                            self.anti[(key, d, sel)] = self.anti.get((key, d, sel), 0) + n
            for term, n in b.st.anti_held.items():
                if n and isinstance(term[0], str) and term[1] in cls.matched:
                    d = domain(b, term[0])
                    if d is not None:
                        self.forbidden.add((term[0], d))
        # the first pod of a group with affinity to itself (satisfyPodAffinity): no pod anywhere matches all the
        # terms and the pod matches all of them itself
        self.first = not self.affinity and conj in cls.matched

    def admits(self, b: Bin, new: bool = False) -> str | None:
        """None when a pod of the class may go to node ``b`` as far as the topology goes, else why not.

        ``new``: ``b`` is a node this plan would open, not one of the counted nodes: it is counted as the
        scheduler will count it once it registers, with its DaemonSet pods (a zone where no node was counted
        becomes a domain)."""
        shape = self.cls.shape
        matched = self.cls.matched
        sc = b.st.sel_counts
        for key, skew, sel, counts, low in self.spread:
            d = domain(b, key)
            if d is None:
                return f"has no {key} label (topology spread)"
            if key == HOSTNAME_KEY:
                count = sc.get(sel, 0)
                if new:
                    low = min(low, count)
            elif new:
                count = counts.get(d, 0) + sc.get(sel, 0)
                if d not in counts:
                    low = min(low, count)
            else:
                count = counts.get(d, 0)
            if count + (1 if sel in matched else 0) - low > skew:
                return f"topology spread on {key} (maxSkew {skew}) allows no more pods there"
        if shape.pod_affinity:
            own = sc.get(shape.affinity_all, 0) if new else 0  # its DaemonSet pods that match all the terms
            missing = None
            for key, _ in shape.pod_affinity:
                d = domain(b, key)
                if d is None:
                    return f"has no {key} label (required pod affinity)"  # every term's key must be there
                if missing is None and not own and not self.affinity.get((key, d)):
                    missing = key
            if missing is not None and not self.first:
                return f"required pod affinity on {missing}: no matching pod in its domain"
        for key, sel in shape.anti_other:
            d = domain(b, key)
            if d is not None and (self.anti.get((key, d, sel)) or (new and sc.get(sel))):
                return f"required pod anti-affinity on {key}: a matching pod runs in its domain"
        for key, d in self.forbidden:
            if domain(b, key) == d:
                return f"a pod in its {key} domain has required anti-affinity against this pod"
        if new:
            for term, n in b.st.anti_held.items():
                if n and isinstance(term[0], str) and term[1] in matched:
                    return f"a pod in its {term[0]} domain has required anti-affinity against this pod"
        return None

    def rank(self, b: Bin) -> int:
        """Matching pods in the node's domains of the non-hostname spread constraints (fewer is better)."""
        return sum(
            counts.get(domain(b, key), 0) for key, _, _, counts, _ in self.spread if key != HOSTNAME_KEY
        )
