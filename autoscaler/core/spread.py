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

from autoscaler.core.fit import NodeState, capacity, static_reason
from autoscaler.core.names import HOSTNAME_KEY, ZONE_KEY
from autoscaler.core.packing import NEW, Bin, Packer, PodClass, group_zone
from autoscaler.core.selectors import untolerated


def domain(b: Bin, key: str):
    """The node's (run's) value of a topology key; None when it has none."""
    if key == HOSTNAME_KEY:
        return ("node", id(b))  # every node is its own domain (a run's nodes: one each, with equal counts)
    if key == ZONE_KEY:
        return b.zone or b.labels.get(ZONE_KEY)
    return b.labels.get(key)


def _eligible(packer: Packer, cls: PodClass, b: Bin, taints: bool, affinity: bool, cache: dict) -> bool:
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


class _Counts:
    """The topology counts for one pod of ``cls``, from the bins as they are now."""

    def __init__(self, packer: Packer, cls: PodClass, region: str | None, allow_new: bool):
        shape = cls.shape
        bins = [b for b in packer.bins if region is None or b.region == region]
        self.bins = bins
        cache: dict = {}
        # spread: per constraint, counts per domain over the counted nodes, and the minimum
        self.spread = []
        for key, skew, sel, taints, affinity, min_domains in shape.spread:
            counts: dict = {}
            nodes = 0
            for b in bins:
                d = domain(b, key)
                if d is None or not _eligible(packer, cls, b, taints, affinity, cache):
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


def _place_one(packer: Packer, cls: PodClass, region: str | None, allow_new: bool, why: list) -> bool:
    counts = _Counts(packer, cls, region, allow_new)
    shape = cls.shape
    best = None
    for key in packer.order:
        run = packer.runs[key]
        for i, b in enumerate(run):
            if region is not None and b.region != region:
                continue
            if packer.static(shape, b.labels, b.taints, b.tmpl, b.node) is not None:
                continue
            if capacity(shape, cls.matched, b.st) <= 0:
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
        packer._fill(run, i, b, cls, 1, 1)
        return True
    if not allow_new:
        return False
    options = []
    for room, k in packer.group_order(cls, 1):
        g = room.group
        if region is not None and g.region != region:
            continue
        if room.blocked:
            cls.notes.setdefault(g.name, ("blocked", room.blocked))
            continue
        if min(room.headroom - room.new, packer.cap_left) <= 0:
            packer._note_full(cls, room)
            continue
        for z in g.zones if len(g.zones) > 1 else [group_zone(g)]:
            probe = Bin(NEW, g, g.region, None, g.labels, g.taints, room.tmpl, packer_state(g), 1, z)
            reason = counts.admits(cls, probe)
            if reason is None:
                options.append((counts.rank(probe), len(options), room, k, z))
            else:
                why.append(reason)
    if not options:
        return False
    _, _, room, k, z = min(options)
    packer._open(room, cls, 1, k, 1, z)
    return True


def packer_state(g) -> NodeState:
    return NodeState(dict(g.allocatable), ports=set(g.ports))


def place_topology(packer: Packer, cls: PodClass, n: int, region: str | None, allow_new: bool) -> int:
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
