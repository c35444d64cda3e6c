"""A pod's scheduling-relevant shape: requests and constraints, parsed once and interned.

Pods of one Job or ReplicaSet share a shape object, so the planner compares and caches by identity.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace

import msgspec

from autoscaler.core.names import HOSTNAME_KEY, ZONE_KEY
from autoscaler.core.quantity import parse_resources
from autoscaler.core.selectors import (
    label_map,
    parse_label_selector,
    parse_requirements,
    parse_tolerations,
    selector_matches,
)

POD_MILLI = 1000  # every pod uses one of the node's "pods"


@dataclass(frozen=True, slots=True, eq=False)
class PodShape:
    requests: tuple[tuple[str, int], ...]  # non-zero requests in milli-units, "pods" included
    node_selector: tuple  # requirements from spec.nodeSelector (AND)
    affinity_terms: tuple  # required node affinity: tuple of (label requirements, field requirements) (OR)
    tolerations: tuple
    host_ports: frozenset  # (protocol, port, host IP or "" for all)
    anti_affinity: (
        tuple  # hostname anti-affinity: tuple of selector keys (namespaces or None for all, requirements)
    )
    anti_other: tuple  # anti-affinity on other topology keys: (topology key, selector key)
    pod_affinity: tuple  # required pod affinity: (topology key, selector key) per term
    spread: tuple  # DoNotSchedule spread: (key, maxSkew, selector key, honour taints, honour affinity, minDomains)
    unsupported: tuple[str, ...]  # constraints the planner cannot model (the pod is reported, never placed)
    by_name: bool = False  # node constraints look at the node's name or hostname (no caching per template)
    # what the node-level filters look at (selectors, node affinity, tolerations): shapes that differ only in
    # their requests share it, and so the scheduler's cached answer per node template
    static_key: tuple = ()
    # the selector key of a pod that matches ALL the required pod affinity terms (their namespaces intersected,
    # their requirements ANDed); None without such terms. kube-scheduler counts only such pods for the pod's
    # affinity (interpodaffinity/filtering.go, updateWithAffinityTerms -> podMatchesAllAffinityTerms)
    affinity_all: tuple | None = None

    @property
    def topology(self) -> bool:
        """Placed pod by pod against the cluster's topology counts (spread, affinity, anti-affinity by domain)."""
        return bool(self.spread or self.pod_affinity or self.anti_other)

    def request(self, resource: str) -> int:
        for r, q in self.requests:
            if r == resource:
                return q
        return 0


_SHAPES: dict[bytes, PodShape] = {}
_STATIC_KEYS: dict[tuple, tuple] = {}  # interned, so equal keys are one object


def _label_key_values(affinity, spread, labels: dict) -> tuple | None:
    """The pod's values of the label keys its matchLabelKeys / mismatchLabelKeys name (part of the cache key)."""
    blob = _KEY.encode((affinity, spread))
    if b"LabelKeys" not in blob:
        return None
    return tuple(sorted((k, v) for k, v in labels.items() if _KEY.encode(k) in blob))


_KEY = msgspec.msgpack.Encoder()


def _shape_key(spec: dict, affinity, spread, namespace: str | None, labels: dict | None) -> bytes | None:
    """What the shape depends on, as MessagePack bytes (C speed; it tells 1 from 1.0, True and "1" apart, as a
    repr() would) of the fields that make the shape, and only those (env, image, nodeName must not split the pods
    of one Job). None: not interned."""
    try:
        lkv = _label_key_values(affinity, spread, labels) if labels and (affinity or spread) else None
        return _KEY.encode(
            (
                [(c.get("resources"), c.get("ports")) for c in spec.get("containers") or ()],
                [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or ()],
                spec.get("overhead"),
                spec.get("resources"),
                spec.get("nodeSelector"),
                affinity,
                spec.get("tolerations"),
                spread,
                namespace,
                lkv,
            )
        )
    except (AttributeError, TypeError, ValueError, OverflowError):
        return None  # a value of the wrong kind (reported by the parser) or one MessagePack cannot hold


def _container_requests(c: dict, where: str, errors: list[str]) -> dict[str, int]:
    res = c.get("resources") or {}
    if not isinstance(res, dict):
        errors.append(f"{where}.resources: expected {{requests, limits}}")
        return {}
    req = parse_resources(res.get("requests"), f"{where}.resources.requests", errors)
    # The API server defaults a request to the limit when only the limit is given.
    for name, q in parse_resources(res.get("limits"), f"{where}.resources.limits", errors).items():
        req.setdefault(name, q)
    return req


POD_LEVEL_RESOURCES = ("cpu", "memory")


def _pod_level(raw: object, where: str, errors: list[str]) -> dict[str, int]:
    """Pod-level ``spec.resources`` (Kubernetes 1.32+, PodLevelResources): its requests (a limit without a request
    counts as the request) replace the containers' sum for cpu, memory and hugepages
    (k8s.io/component-helpers/resource/helpers.go ``PodRequests``: pod-level values take precedence)."""
    if raw is None:
        return {}
    w = f"{where}.spec.resources"
    if not isinstance(raw, dict):
        errors.append(f"{w}: expected {{requests, limits}}")
        return {}
    req = parse_resources(raw.get("requests"), f"{w}.requests", errors)
    for name, q in parse_resources(raw.get("limits"), f"{w}.limits", errors).items():
        req.setdefault(name, q)
    for name in list(req):
        if name not in POD_LEVEL_RESOURCES and not name.startswith("hugepages-"):
            errors.append(f"{w}: {name} cannot be set at pod level; use cpu, memory or hugepages-<size>")
            del req[name]
    return req


def effective_requests(spec: dict, where: str, errors: list[str]) -> dict[str, int]:
    """max(app containers + sidecars, each init container + sidecars started before it), replaced by pod-level
    requests where given, + overhead."""
    total: dict[str, int] = {}
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errors.append(f"{where}.spec.containers: expected a non-empty list of containers")
        return total
    for i, c in enumerate(containers):
        for r, q in _container_requests(c, f"{where}.spec.containers[{i}]", errors).items():
            total[r] = total.get(r, 0) + q
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for i, c in enumerate(spec.get("initContainers") or ()):
        req = _container_requests(c, f"{where}.spec.initContainers[{i}]", errors)
        if c.get("restartPolicy") == "Always":
            for r, q in req.items():
                sidecars[r] = sidecars.get(r, 0) + q
        else:
            for r, q in req.items():
                peak[r] = max(peak.get(r, 0), q + sidecars.get(r, 0))
    for r, q in sidecars.items():
        total[r] = total.get(r, 0) + q
    for r, q in peak.items():
        total[r] = max(total.get(r, 0), q)
    for r, q in _pod_level(spec.get("resources"), where, errors).items():
        total[r] = q
    for r, q in parse_resources(spec.get("overhead"), f"{where}.spec.overhead", errors).items():
        total[r] = total.get(r, 0) + q
    total["pods"] = POD_MILLI
    return total


def _node_affinity(spec: dict, where: str, errors: list[str]) -> tuple:
    na = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not na:
        return ()
    terms = na.get("nodeSelectorTerms") if isinstance(na, dict) else None
    w = f"{where}.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    if not isinstance(terms, list) or not terms:
        errors.append(f"{w}: expected a non-empty list of terms")
        return ()
    out = []
    for i, t in enumerate(terms):
        t = t or {}
        labels = parse_requirements(t.get("matchExpressions"), f"{w}[{i}].matchExpressions", errors)
        fields = parse_requirements(t.get("matchFields"), f"{w}[{i}].matchFields", errors)
        for key, *_ in fields:
            if key != "metadata.name":
                errors.append(f"{w}[{i}].matchFields: field {key!r} is not supported; use metadata.name")
        out.append((labels, fields))
    return tuple(out)


PROTOCOLS = ("TCP", "UDP", "SCTP")


def _ports(spec: dict, where: str, errors: list[str]) -> frozenset:
    """Host ports as (protocol, port, host IP) with "" for all addresses, checked as the API server does
    (k8s.io/kubernetes/pkg/apis/core/validation: ``validateContainerPorts``): ports 1-65535, a known protocol,
    an IP address for hostIP."""
    out = set()
    for ci, c in enumerate(spec.get("containers") or ()):
        ports = c.get("ports") if isinstance(c, dict) else None
        if ports is None:
            continue
        if not isinstance(ports, list):
            errors.append(
                f"{where}.spec.containers[{ci}].ports: expected a list of {{containerPort, hostPort}}"
            )
            continue
        for pi, port in enumerate(ports):
            w = f"{where}.spec.containers[{ci}].ports[{pi}]"
            if not isinstance(port, dict):
                errors.append(f"{w}: expected {{containerPort, hostPort, protocol}}")
                continue
            for field in ("containerPort", "hostPort"):
                v = port.get(field)
                if v is None and field == "hostPort":
                    continue
                if (
                    isinstance(v, bool)
                    or not isinstance(v, int)
                    or not (1 <= v <= 65535 or (field == "hostPort" and v == 0))
                ):
                    errors.append(f"{w}.{field}: {v!r} is not a port number; use an integer from 1 to 65535")
            protocol = port.get("protocol") or "TCP"
            if protocol not in PROTOCOLS:
                errors.append(f"{w}.protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
            host_ip = port.get("hostIP") or ""
            if host_ip:
                try:
                    ipaddress.ip_address(host_ip)
                except ValueError:
                    errors.append(f"{w}.hostIP: {host_ip!r} is not an IP address")
            hp = port.get("hostPort")
            if isinstance(hp, int) and not isinstance(hp, bool) and 1 <= hp <= 65535:
                out.add((protocol, hp, "" if host_ip == "0.0.0.0" else host_ip))
    return frozenset(out)


def ports_conflict(wanted: frozenset, used) -> tuple | None:
    """The first host port of ``wanted`` that ``used`` already holds, by the scheduler's NodePorts rule
    (k8s.io/kubernetes/pkg/scheduler/framework/types.go, ``HostPortInfo.CheckConflict``): the same protocol and
    port conflict when either side binds all addresses (0.0.0.0) or both bind the same IP; else None."""
    for protocol, port, ip in wanted:
        for uprotocol, uport, uip in used:
            if port == uport and protocol == uprotocol and (not ip or not uip or ip == uip):
                return (protocol, port, ip)
    return None


def _namespaces(t: dict, namespace: str, w: str, errors: list[str], unsupported: list[str], namespaces):
    """The namespaces a pod affinity term looks at (Kubernetes: the union of ``namespaces`` and the namespaces
    ``namespaceSelector`` matches; neither: the pod's own; an empty selector ``{}``: every namespace, None here).
    A non-empty selector is matched against the snapshot's ``namespaces`` (their labels, plus the
    ``kubernetes.io/metadata.name`` label every namespace carries)."""
    names = t.get("namespaces") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        errors.append(f"{w}.namespaces: expected a list of namespace names")
        names = []
    ns_sel = t.get("namespaceSelector")
    if ns_sel is None:
        return frozenset(names) if names else frozenset((namespace,))
    if ns_sel == {}:
        return None
    sel = parse_label_selector(ns_sel, f"{w}.namespaceSelector", errors)
    if namespaces is None:
        unsupported.append(
            "pod affinity with a namespaceSelector needs the namespaces' labels: give snapshot.namespaces"
        )
        return frozenset()
    matched = {
        name
        for name, labels in namespaces.items()
        if selector_matches(sel or (), {**labels, "kubernetes.io/metadata.name": name})
    }
    return frozenset(matched | set(names))


def _pod_terms(
    spec: dict, namespace: str, where: str, errors: list[str], namespaces: dict | None, labels: dict
) -> tuple[tuple, tuple, tuple, list[str]]:
    """Required pod affinity and anti-affinity terms: (hostname anti-affinity selector keys, other anti-affinity
    (topology key, selector key), affinity (topology key, selector key), unsupported)."""
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, dict):
        errors.append(f"{where}.spec.affinity: expected {{nodeAffinity, podAffinity, podAntiAffinity}}")
        return (), (), (), []
    unsupported: list[str] = []
    out: dict[str, list] = {"podAffinity": [], "podAntiAffinity": []}
    for kind in out:
        terms = (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
        if not isinstance(terms, list):
            errors.append(
                f"{where}.spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution: expected a list"
            )
            continue
        for i, t in enumerate(terms):
            w = f"{where}.spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not isinstance(t, dict):
                errors.append(f"{w}: expected {{labelSelector, topologyKey}}")
                continue
            key = t.get("topologyKey")
            if not isinstance(key, str) or not key:
                errors.append(
                    f"{w}.topologyKey: missing; give a node label such as {HOSTNAME_KEY} or {ZONE_KEY}"
                )
                continue
            ns = _namespaces(t, namespace, w, errors, unsupported, namespaces)
            sel = parse_label_selector(t.get("labelSelector"), f"{w}.labelSelector", errors)
            if sel is None:
                continue  # a term without a selector matches no pod
            sel = _with_label_keys(sel, t, w, labels, errors, mismatch=True)
            out[kind].append((key, (ns, sel)))
    anti_host = tuple(sel for key, sel in out["podAntiAffinity"] if key == HOSTNAME_KEY)
    anti_other = tuple((key, sel) for key, sel in out["podAntiAffinity"] if key != HOSTNAME_KEY)
    return anti_host, anti_other, tuple(out["podAffinity"]), unsupported


def affinity_conjunction(terms: tuple) -> tuple | None:
    """The one selector key that a pod matches exactly when it matches every (topology key, (namespaces,
    requirements)) term: the namespaces intersected (None: every namespace), the requirements ANDed."""
    if not terms:
        return None
    namespaces = None
    reqs: list = []
    for _, (ns, sel) in terms:
        if ns is not None:
            namespaces = ns if namespaces is None else namespaces & ns
        reqs.extend(r for r in sel if r not in reqs)
    return (namespaces, tuple(reqs))


def _with_label_keys(
    sel: tuple, term: dict, w: str, labels: dict, errors: list[str], mismatch: bool
) -> tuple:
    """The selector with ``matchLabelKeys`` (key In the pod's value) and, for affinity terms,
    ``mismatchLabelKeys`` (key NotIn the pod's value) ANDed in, as the API server merges them into the
    labelSelector (Kubernetes 1.31+ for pod affinity, 1.34+ for topology spread; merging again is harmless).
    Keys the pod has no label for are skipped (topology spread) as Kubernetes does."""
    extra = []
    for field, op in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        keys = term.get(field)
        if keys is None or (field == "mismatchLabelKeys" and not mismatch):
            continue
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            errors.append(f"{w}.{field}: expected a list of label keys")
            continue
        extra.extend((k, op, (labels[k],)) for k in keys if k in labels)
    return tuple(sel) + tuple(r for r in extra if r not in sel) if extra else sel


def _spread(spec: dict, namespace: str, where: str, errors: list[str], labels: dict) -> tuple:
    """DoNotSchedule topology spread constraints as (topology key, maxSkew, selector key, honour node taints,
    honour node affinity, minDomains); Kubernetes' defaults: taints ignored, node affinity honoured."""
    out = []
    raw = spec.get("topologySpreadConstraints") or []
    if not isinstance(raw, list):
        errors.append(f"{where}.spec.topologySpreadConstraints: expected a list")
        return ()
    for i, c in enumerate(raw):
        w = f"{where}.spec.topologySpreadConstraints[{i}]"
        if not isinstance(c, dict):
            errors.append(f"{w}: expected {{maxSkew, topologyKey, whenUnsatisfiable, labelSelector}}")
            continue
        if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue  # ScheduleAnyway is a preference
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or isinstance(skew, bool) or skew < 1:
            errors.append(f"{w}.maxSkew: expected an integer of at least 1, got {skew!r}")
            continue
        key = c.get("topologyKey")
        if not isinstance(key, str) or not key:
            errors.append(f"{w}.topologyKey: missing; give a node label such as {HOSTNAME_KEY} or {ZONE_KEY}")
            continue
        min_domains = c.get("minDomains")
        if min_domains is not None and (
            not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1
        ):
            errors.append(f"{w}.minDomains: expected an integer of at least 1, got {min_domains!r}")
            continue
        sel = parse_label_selector(c.get("labelSelector"), f"{w}.labelSelector", errors)
        if sel is None:
            continue  # without a labelSelector no pod is counted (not even this one): it never limits
        sel = _with_label_keys(sel, c, w, labels, errors, mismatch=False)
        out.append(
            (
                key,
                skew,
                (frozenset((namespace,)), sel),
                c.get("nodeTaintsPolicy") == "Honor",
                c.get("nodeAffinityPolicy") != "Ignore",
                min_domains or 1,
            )
        )
    return tuple(out)


def parse_shape(
    spec: dict,
    namespace: str,
    where: str,
    errors: list[str],
    namespaces: dict | None = None,
    labels: dict | None = None,
    memo: dict | None = None,
) -> PodShape | None:
    """The interned shape of a pod spec; None (and lines in ``errors``) when the spec is invalid.
    ``namespaces``: namespace name -> labels, for pod affinity terms with a namespaceSelector.
    ``memo``: the shapes found so far in one parse by the spec dict's identity (pods whose decoder shared one
    spec dict, :func:`autoscaler.core.lean.lean_pods`); a parse's objects are not changed while it runs."""
    if memo is not None:
        hit = memo.get((id(spec), namespace))
        if hit is not None:
            return hit[1]
    if not isinstance(spec, dict):
        errors.append(f"{where}.spec: expected the pod's spec object")
        return None
    affinity = spec.get("affinity")
    spread = spec.get("topologySpreadConstraints")
    needs_ns = bool(spread) or bool(
        affinity and (affinity.get("podAntiAffinity") or affinity.get("podAffinity"))
    )
    key = _shape_key(spec, affinity, spread, namespace if needs_ns else None, labels)
    if key is not None and namespaces is not None and b"namespaceSelector" in key:
        key = None  # its namespaces depend on the snapshot's namespace labels: not interned
    shape = _SHAPES.get(key) if key is not None else None
    if shape is not None:
        return _remember(memo, spec, namespace, key, shape)
    before = len(errors)
    requests = effective_requests(spec, where, errors)
    ns = spec.get("nodeSelector") or {}
    if not isinstance(ns, dict):
        errors.append(f"{where}.spec.nodeSelector: expected a mapping of label to value")
        ns = {}
    node_selector = label_map(ns, f"{where}.spec.nodeSelector", errors)
    terms = _node_affinity(spec, where, errors)
    tolerations = parse_tolerations(spec.get("tolerations"), f"{where}.spec.tolerations", errors)
    ports = _ports(spec, where, errors)
    anti, anti_other, pod_affinity, unsupported = _pod_terms(
        spec, namespace, where, errors, namespaces, labels or {}
    )
    spread = _spread(spec, namespace, where, errors, labels or {})
    if len(errors) > before:
        return None
    shape = PodShape(
        requests=tuple(sorted((r, q) for r, q in requests.items() if q > 0)),
        node_selector=node_selector,
        affinity_terms=terms,
        tolerations=tolerations,
        host_ports=ports,
        anti_affinity=anti,
        anti_other=anti_other,
        pod_affinity=pod_affinity,
        spread=spread,
        unsupported=tuple(unsupported),
        by_name=any(r[0] == HOSTNAME_KEY for r in node_selector)
        or any(fields or any(r[0] == HOSTNAME_KEY for r in labels) for labels, fields in terms),
        static_key=_STATIC_KEYS.setdefault(
            (node_selector, terms, tolerations, tuple(unsupported)),
            (node_selector, terms, tolerations, tuple(unsupported)),
        ),
        affinity_all=affinity_conjunction(pod_affinity),
    )
    if key is not None:
        if len(_SHAPES) > 200_000:
            _SHAPES.clear()
        _SHAPES[key] = shape
    return _remember(memo, spec, namespace, key, shape)


def with_node_terms(shape: PodShape, terms: tuple, reason: str | None) -> PodShape:
    """The shape with ``terms`` as its required node affinity terms and ``reason`` (when given) as one more
    thing that keeps it off every node: what its claims' volumes add (:mod:`autoscaler.core.volumes`)."""
    unsupported = shape.unsupported + ((reason,) if reason else ())
    static = (shape.node_selector, terms, shape.tolerations, unsupported)
    return replace(
        shape,
        affinity_terms=terms,
        unsupported=unsupported,
        by_name=shape.by_name
        or any(fields or any(r[0] == HOSTNAME_KEY for r in labels) for labels, fields in terms),
        static_key=_STATIC_KEYS.setdefault(static, static),
    )


def _remember(memo: dict | None, spec: dict, namespace: str, key: bytes | None, shape: PodShape) -> PodShape:
    """Note the shape of this spec dict in the parse's memo, unless it depends on more than the spec and the
    namespace (the pod's labels through matchLabelKeys, the namespaces' labels: key None)."""
    if memo is not None and key is not None and b"LabelKeys" not in key:
        memo[(id(spec), namespace)] = (spec, shape)  # the entry keeps the dict alive: its id is not reused
    return shape
