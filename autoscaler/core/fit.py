"""The scheduling predicate shared by the planner and the simulator's scheduler.

``static_reason`` checks what depends only on a node's labels, taints and name (node selector, required node
affinity, taints and tolerations); ``capacity`` counts how many pods of one shape still fit on a node in a given
state (resources, host ports, hostname anti-affinity, hostname topology spread). ``pod_fits_node`` runs both on
Kubernetes objects as kubectl prints them.
"""

from __future__ import annotations

from autoscaler.core.errors import SnapshotError
from autoscaler.core.names import HOSTNAME_KEY, ZONE_KEY
from autoscaler.core.podspec import PodShape, parse_shape, ports_conflict
from autoscaler.core.quantity import format_amount, parse_resources
from autoscaler.core.selectors import (
    parse_taints,
    requirement_holds,
    selector_matches,
    show_requirement,
    show_taint,
    untolerated,
)

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
BIG = 1 << 60


class NodeState:
    """What is left on one node: free resources, pods per selector key, host ports, anti-affinity held."""

    __slots__ = ("free", "sel_counts", "ports", "anti_held")

    def __init__(self, free: dict[str, int], sel_counts=None, ports=None, anti_held=None):
        self.free = free
        self.sel_counts: dict = sel_counts if sel_counts is not None else {}
        self.ports: set = ports if ports is not None else set()
        self.anti_held: dict = anti_held if anti_held is not None else {}

    def copy(self) -> NodeState:
        return NodeState(dict(self.free), dict(self.sel_counts), set(self.ports), dict(self.anti_held))

    def add(self, shape: PodShape, matched: frozenset, k: int) -> None:
        """Account ``k`` pods of ``shape`` (whose labels match the selector keys ``matched``)."""
        free = self.free
        for r, q in shape.requests:
            free[r] = free.get(r, 0) - q * k
        if shape.host_ports:
            self.ports |= shape.host_ports
        self.count(shape, matched, k)

    def count(self, shape: PodShape, matched: frozenset, k: int) -> None:
        """Count ``k`` pods of ``shape`` for the selectors and anti-affinity terms, not their requests or ports
        (a group's DaemonSet pods on its template: the group's allocatable and ports already leave them out)."""
        sc = self.sel_counts
        for sel in matched:
            sc[sel] = sc.get(sel, 0) + k
        for sel in shape.anti_affinity:
            self.anti_held[sel] = self.anti_held.get(sel, 0) + k
        for term in shape.anti_other:  # (topology key, selector key): held by the node's whole domain
            self.anti_held[term] = self.anti_held.get(term, 0) + k


def static_reason(
    shape: PodShape, labels: dict, taints: tuple, name: str | None = None, zones: tuple = ()
) -> str | None:
    """None when labels, taints and name admit the pod, else why not (e.g. ``nodeSelector gpu=a100``).

    ``zones``: the zones a node of a group spanning several zones may come up in, for a template whose labels
    carry no zone (the Auto Scaling group picks it). Every real node has a ``topology.kubernetes.io/zone`` label,
    so a requirement on it holds for such a node only when it holds in each of those zones."""
    if shape.unsupported:
        return shape.unsupported[0]
    picks = [False]  # a zone requirement held in some of ``zones`` but not in all
    for req in shape.node_selector:
        if not _holds(req, labels, zones, picks):
            return f"does not match nodeSelector {show_requirement(req)}" + _picks(picks, zones)
    if shape.affinity_terms:
        for label_reqs, field_reqs in shape.affinity_terms:
            # an empty term matches no node (Kubernetes: "a null or empty node selector term matches no objects")
            if (
                (label_reqs or field_reqs)
                and all(_holds(r, labels, zones, picks) for r in label_reqs)
                and all(
                    name is not None and requirement_holds(r, {"metadata.name": name}) for r in field_reqs
                )
            ):
                break
        else:
            terms = " or ".join(
                ", ".join(show_requirement(r) for r in lr + fr) or "(empty)"
                for lr, fr in shape.affinity_terms
            )
            return f"does not match required node affinity {terms}" + _picks(picks, zones)
    taint = untolerated(shape.tolerations, taints)
    if taint is not None:
        return f"has taint {show_taint(taint)}, which the pod does not tolerate"
    return None


def _holds(req: tuple, labels: dict, zones: tuple, picks: list) -> bool:
    """``requirement_holds``, a zone requirement on a template of several zones held in each of them."""
    if not zones or req[0] != ZONE_KEY or ZONE_KEY in labels:
        return requirement_holds(req, labels)
    held = [requirement_holds(req, {ZONE_KEY: z}) for z in zones]
    if any(held) and not all(held):
        picks[0] = True
    return all(held)


def _picks(picks: list, zones: tuple) -> str:
    return f" in every zone its group may pick ({', '.join(zones)})" if picks[0] else ""


def capacity(shape: PodShape, matched: frozenset, st: NodeState) -> int:
    """How many more pods of ``shape`` fit on a node in state ``st`` (0 when none)."""
    k = BIG
    free = st.free
    for r, q in shape.requests:
        f = free.get(r, 0) // q
        if f < k:
            if f <= 0:
                return 0
            k = f
    if shape.host_ports:
        if st.ports and ports_conflict(shape.host_ports, st.ports):
            return 0
        k = 1
    sc = st.sel_counts
    for sel in shape.anti_affinity:
        if sc.get(sel):
            return 0
        if sel in matched:
            k = 1
    if st.anti_held and any(sel in matched for sel, n in st.anti_held.items() if n):
        return 0
    return k


def capacity_reason(shape: PodShape, matched: frozenset, st: NodeState) -> str | None:
    """Why ``capacity`` is 0 (None when at least one pod fits)."""
    for r, q in shape.requests:
        have = st.free.get(r, 0)
        if have < q:
            return f"needs {format_amount(r, q)} {r}; {format_amount(r, max(have, 0))} free"
    clash = ports_conflict(shape.host_ports, st.ports) if shape.host_ports else None
    if clash:
        return f"host port {clash[1]}/{clash[0]} is in use"
    for sel in shape.anti_affinity:
        if st.sel_counts.get(sel):
            return "required pod anti-affinity: a matching pod runs on the node"
    if any(sel in matched for sel, n in st.anti_held.items() if n):
        return "a pod on the node has required anti-affinity against this pod"
    return None


def selector_keys(shape: PodShape) -> list:
    """The selector keys the shape's rules count pods by: its anti-affinity terms, the conjunction of its affinity
    terms (a pod counts for them only when it matches all: ``PodShape.affinity_all``) and its spread selectors."""
    keys = list(shape.anti_affinity) + [sel for _, sel in shape.anti_other] + [c[2] for c in shape.spread]
    if shape.affinity_all is not None:
        keys.append(shape.affinity_all)
    return keys


def matching(keys, namespace: str, labels: dict) -> frozenset:
    """The selector keys among ``keys`` that a pod in ``namespace`` with ``labels`` matches (a key's namespaces
    None: every namespace)."""
    return frozenset(
        k for k in keys if (k[0] is None or namespace in k[0]) and selector_matches(k[1], labels)
    )


# --- Kubernetes objects (dict level), for the simulator's scheduler ---------------------------------------------
_POD_CACHE: dict[int, tuple] = {}


def _pod_parts(pod: dict) -> tuple[PodShape, str, dict]:
    """The pod's shape, namespace and labels; cached by the dict's identity (the entry keeps the dict alive, so
    an id is never reused while cached)."""
    hit = _POD_CACHE.get(id(pod))
    if hit is not None and hit[0] is pod:
        return hit[1]
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    errors: list[str] = []
    shape = parse_shape(
        pod.get("spec"), ns, f"pod {ns}/{meta.get('name')}", errors, None, meta.get("labels") or {}
    )
    if shape is None:
        raise SnapshotError(errors)
    parts = (shape, ns, meta.get("labels") or {})
    if len(_POD_CACHE) > 100_000:
        _POD_CACHE.clear()
    _POD_CACHE[id(pod)] = (pod, parts)
    return parts


def _node_parts(node: dict) -> tuple[str, dict, tuple, dict, bool, bool]:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    errors: list[str] = []
    name = meta.get("name")
    taints = parse_taints(spec.get("taints"), f"node {name}.spec.taints", errors)
    alloc = parse_resources(
        status.get("allocatable") or status.get("capacity"), f"node {name}.status", errors
    )
    if errors:
        raise SnapshotError(errors)
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )
    if not status.get("conditions"):
        ready = True  # a bare node object without conditions is taken as ready
    return name, meta.get("labels") or {}, taints, alloc, bool(spec.get("unschedulable")), ready


def pod_fits_node(pod: dict, node: dict, pods_on_node: list[dict]) -> str | None:
    """None when ``pod`` can run on ``node`` next to ``pods_on_node``, else the reason.

    Checks resources (init containers, sidecars and overhead included), nodeSelector, required node affinity,
    taints and tolerations, cordoned and NotReady nodes, host ports, required hostname anti-affinity (both
    ways), required pod affinity on the hostname (a matching pod on the node) and DoNotSchedule topology spread on
    the hostname (skew against an empty node). Spread on other keys is left to the caller; pod affinity and
    anti-affinity on other keys, which need the whole cluster's pods, are refused with that reason (the
    planner decides them by domain: ``spread.py``). Finished pods on the node are ignored.

    Parsed pods are cached by identity: a pod dict's spec must not change while the caller keeps passing it
    (binding it, i.e. setting ``spec.nodeName`` or the phase, is fine).
    """
    shape, ns, labels = _pod_parts(pod)
    name, node_labels, taints, alloc, unschedulable, ready = _node_parts(node)
    if not ready:
        return "node is not ready"
    if unschedulable and untolerated(shape.tolerations, (UNSCHEDULABLE_TAINT,)):
        return "node is cordoned (unschedulable)"
    reason = static_reason(shape, node_labels, taints, name)
    if reason:
        return f"node {reason}" if reason.startswith(("does", "has")) else reason
    others = [_pod_parts(p) + (p,) for p in pods_on_node]
    keys = set(selector_keys(shape))
    for other_shape, _, _, _ in others:
        keys.update(other_shape.anti_affinity)
    st = NodeState(dict(alloc))
    for other_shape, other_ns, other_labels, raw in others:
        if (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        st.add(other_shape, matching(keys, other_ns, other_labels), 1)
    matched = matching(keys, ns, labels)
    if capacity(shape, matched, st) < 1:
        return capacity_reason(shape, matched, st) or "does not fit"
    for key, skew, sel, *_ in shape.spread:
        # the node alone, against an empty node: the cluster-wide minimum is the caller's
        count = st.sel_counts.get(sel, 0) + (1 if sel in matched else 0)
        if key == HOSTNAME_KEY and count > skew:
            return f"topology spread on hostname: {count - 1} matching pods already (maxSkew {skew})"
    for key, _sel in shape.pod_affinity:
        if key != HOSTNAME_KEY:
            return f"required pod affinity on {key} needs the whole cluster's pods; not decided node by node"
    if shape.pod_affinity and not st.sel_counts.get(shape.affinity_all):
        # a pod counts only when it matches every term (interpodaffinity, podMatchesAllAffinityTerms)
        return "required pod affinity: no matching pod on the node"
    for key, _sel in shape.anti_other:
        return f"required pod anti-affinity on {key} needs the whole cluster's pods; not decided node by node"
    return None
