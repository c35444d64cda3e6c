"""Parse and check a snapshot (docs/snapshot.md) into :class:`~autoscaler.core.model.Snapshot`.

Every problem becomes one line naming the object and field, what is wrong and what would be right; all of
them are collected and raised together as :class:`~autoscaler.core.errors.SnapshotError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from autoscaler.core.daemonsets import with_daemonset_overhead
from autoscaler.core.errors import SnapshotError
from autoscaler.core.gcpause import gc_paused
from autoscaler.core.model import Failure, Group, GroupState, Instance, LaunchTemplate, Node, Pod, Snapshot
from autoscaler.core.names import (
    DO_NOT_DISRUPT_ANNOTATION,
    GANG_ANNOTATION,
    INSTANCE_TYPE_KEY,
    JOB_NAME_LABEL,
    MIRROR_ANNOTATION,
    NODE_GROUP_LABEL,
    POD_GROUP_LABEL,
    POD_GROUP_SIZE_ANNOTATION,
    REGION_KEY,
    SAFE_TO_EVICT_ANNOTATION,
    SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION,
    ZONE_KEY,
)
from autoscaler.core.podspec import parse_shape
from autoscaler.core.quantity import parse_resources
from autoscaler.core.selectors import label_key_problem, label_value_problem, parse_taints
from autoscaler.core.timeutil import parse_time
from autoscaler.core.volumes import Storage, constrained, parse_storage
from clusterspec import catalog

FAILURE_REASONS = (
    "insufficient-capacity",
    "instance-limit",
    "vcpu-limit",
    "spot",
    "unknown",
    "never-registered",
)
TOP_LEVEL = (
    "pods",
    "nodes",
    "groups",
    "regions",
    "now",
    "namespaces",
    "pdbs",
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "scaling_failures",
    "group_state",
    "vanished",
)


@dataclass
class ParseCache:
    """The parsed pods and nodes of the last parse, for the next one to reuse (a running controller's: its caches
    hand it the same objects pass after pass). An object is taken from here only when it is the very dict parsed
    last time (an entry holds it, so its id is not reused) with the same non-empty ``metadata.resourceVersion``:
    the informers replace an object on each change and the API server gives every change a new version, so a
    changed, re-listed or re-created object is parsed again. Objects without a version (snapshot files) and objects
    the parser rejected are never kept; what a parse did not see (deleted pods and nodes) is dropped by it, so the
    cache holds at most the last snapshot's objects. What else a parsed pod depends on is checked per parse: the
    namespaces' labels (a change empties the pod entries), the claims (a pending pod's shape is constrained by
    the storage again each parse) and a node's group (worked out again each parse). Parsed objects are shared
    between parses: nothing in the core changes a Pod or a Node after the parse."""

    pods: dict[int, tuple] = field(default_factory=dict)  # id(raw) -> (raw, version, Pod, claims)
    nodes: dict[int, tuple] = field(default_factory=dict)  # id(raw) -> (raw, version, Node, label group)
    namespaces: object = None
    hits: int = 0  # objects taken from here by the last parse
    parsed: int = 0  # objects the last parse parsed

    def __len__(self) -> int:
        return len(self.pods) + len(self.nodes)


def parse_snapshot(data: dict, cache: ParseCache | None = None) -> Snapshot:
    """The checked snapshot; SnapshotError with one line per problem when it is invalid. ``cache``: the last
    parse's objects (:class:`ParseCache`, filled by this parse for the next); the result is the same with or
    without it."""
    with gc_paused():
        return _parse(data, cache)


def _version(raw: object) -> str | None:
    meta = raw.get("metadata") if raw.__class__ is dict else None
    rv = meta.get("resourceVersion") if meta.__class__ is dict else None
    return rv if rv.__class__ is str and rv else None


def _parse(data: dict, cache: ParseCache | None = None) -> Snapshot:
    if not isinstance(data, dict):
        raise SnapshotError(
            f"snapshot: expected a JSON object with pods, nodes and groups, got {type(data).__name__}"
        )
    errors: list[str] = []
    for key in data:
        if key not in TOP_LEVEL and not key.startswith("x-"):
            errors.append(f"snapshot.{key}: unknown field; expected one of {', '.join(TOP_LEVEL)}")
    for key in ("pods", "nodes", "groups"):
        if key not in data:
            errors.append(f"snapshot.{key}: missing; give a list (possibly empty)")
    now = parse_time(data.get("now"), "snapshot.now", errors) if data.get("now") else datetime.now(UTC)
    groups = _groups(data.get("groups", []), errors)
    regions = _regions(data.get("regions"), groups, errors)
    by_instance: dict[str, str] = {}
    for g in groups:
        for inst in g.instances:
            if inst.id in by_instance:
                errors.append(
                    f"groups ({g.name}).instances: instance {inst.id!r} is also listed in group "
                    f"{by_instance[inst.id]}; an instance belongs to one group and is listed once"
                )
            by_instance.setdefault(inst.id, g.name)
    group_names = {g.name for g in groups}
    node_items = _items(data.get("nodes", []), "nodes", errors)
    if cache is not None:
        cache.hits = cache.parsed = 0
    nodes = _nodes(node_items, by_instance, group_names, errors, cache)
    namespaces = _namespaces(data.get("namespaces"), errors)
    storage = _guard(parse_storage, "snapshot.persistentvolumeclaims", errors, data, errors)
    pod_items = _items(data.get("pods", []), "pods", errors)
    memo: dict = {}  # shapes by spec dict (pods of a Job share one spec dict when decoded lean)
    pods = _pods(pod_items, errors, namespaces, memo, storage, cache)
    if len({n.name for n in nodes}) < len(nodes):
        _duplicates(node_items, "nodes", "node name", errors)
    if len({p.key for p in pods}) < len(pods):
        _duplicates(pod_items, "pods", "pod namespace/name", errors)
    names = {n.name for n in nodes}
    for i, p in enumerate(pods):
        if p.nominated is not None and p.nominated not in names:
            # nominated onto a node that is gone: an ordinary pending pod (a copy: a cached Pod stays as parsed)
            pods[i] = replace(p, nominated=None)
    pdbs = _items(data.get("pdbs") or [], "pdbs", errors)
    failures = _guard(
        _failures,
        "snapshot.scaling_failures",
        errors,
        data.get("scaling_failures") or [],
        group_names,
        errors,
    )
    state = _guard(
        _group_state, "snapshot.group_state", errors, data.get("group_state") or {}, group_names, errors
    )
    vanished, unused = _vanished(data.get("vanished") or {}, group_names, errors)
    if errors:
        raise SnapshotError(errors)
    groups = with_daemonset_overhead(groups, pods)
    return Snapshot(now, pods, nodes, groups, regions, pdbs, failures, state, vanished, unused)


def _same(hit: tuple, raw: object) -> bool:
    """The very dict parsed last time (the entry holds it: its id is not reused), at the same version."""
    try:
        return hit[0] is raw and hit[1] == raw["metadata"].get("resourceVersion")
    except (KeyError, TypeError, AttributeError):  # changed in place into something else: parsed and reported
        return False


def _nodes(
    items: list, by_instance: dict, groups: set, errors: list[str], cache: ParseCache | None
) -> list[Node]:
    old = cache.nodes if cache is not None else None
    kept: dict[int, tuple] = {}
    out = []
    for i, raw in enumerate(items):
        hit = old.get(id(raw)) if old is not None else None
        if hit is not None and _same(hit, raw):
            node = hit[2]
            group = by_instance.get(node.instance_id) if node.instance_id else None
            if group is None and hit[3] in groups:
                group = hit[3]
            if group != node.group:
                node = replace(node, group=group)
                hit = (raw, hit[1], node, hit[3])
            kept[id(raw)] = hit
            cache.hits += 1
            out.append(node)
            continue
        n_err = len(errors)
        node = _guard(_node, f"nodes[{i}]", errors, raw, f"nodes[{i}]", by_instance, groups, errors)
        if node is None:
            continue
        out.append(node)
        if old is not None and len(errors) == n_err and (rv := _version(raw)) is not None:
            kept[id(raw)] = (raw, rv, node, node.labels.get(NODE_GROUP_LABEL))
            cache.parsed += 1
    if cache is not None:
        cache.nodes = kept
    return out


def _pods(
    items: list,
    errors: list[str],
    namespaces: dict | None,
    memo: dict,
    storage: Storage | None,
    cache: ParseCache | None,
) -> list[Pod]:
    old = None
    if cache is not None:
        if cache.namespaces != namespaces:  # a pod's shape may depend on its namespace's labels
            cache.pods, cache.namespaces = {}, namespaces
        old = cache.pods
    kept: dict[int, tuple] = {}
    out = []
    hits = 0
    for i, raw in enumerate(items):
        hit = old.get(id(raw)) if old is not None else None
        if hit is not None and _same(hit, raw):
            kept[id(raw)] = hit
            hits += 1
            p, claims = hit[2], hit[3]
        else:
            n_err = len(errors)
            where = f"pods[{i}]"
            parsed = _guard(_pod, where, errors, raw, where, errors, namespaces, memo, storage, True)
            if parsed is None:
                continue
            p, claims = parsed
            if old is not None and len(errors) == n_err and (rv := _version(raw)) is not None:
                kept[id(raw)] = (raw, rv, p, claims)
                cache.parsed += 1
        if claims and storage is not None and p.phase == "Pending" and not p.node_name:
            p = replace(p, shape=constrained(p.shape, storage, p.namespace, claims, memo))
        out.append(p)
    if cache is not None:
        cache.pods = kept
        cache.hits += hits
    return out


def _vanished(raw: object, groups: set, errors: list[str]) -> tuple[dict[str, int], frozenset[str]]:
    """``{"groups": {group: node slots}, "unused_nodes": [node, ...]}``: capacity bought for pods that vanished
    while pending, and the nodes no pod has landed on (Snapshot.vanished)."""
    want = 'snapshot.vanished: expected {"groups": {group: count}, "unused_nodes": [node names]}'
    if not isinstance(raw, dict) or set(raw) - {"groups", "unused_nodes"}:
        errors.append(want)
        return {}, frozenset()
    counts = raw.get("groups") or {}
    names = raw.get("unused_nodes") or []
    if (
        not isinstance(counts, dict)
        or not isinstance(names, list)
        or not all(isinstance(n, str) for n in names)
    ):
        errors.append(want)
        return {}, frozenset()
    out = {}
    for g, n in counts.items():
        if g not in groups:
            errors.append(
                f"snapshot.vanished.groups.{g}: no such group; expected one of the snapshot's groups"
            )
        elif not isinstance(n, int) or isinstance(n, bool) or n < 0:
            errors.append(f"snapshot.vanished.groups.{g}: {n!r} is not a count; expected 0 or more")
        elif n:
            out[g] = n
    return out, frozenset(names)


def _duplicates(items: list, kind: str, what: str, errors: list[str]) -> None:
    """One line per object whose name an earlier one has: a list holds each object once (a duplicate would double
    the capacity or the demand the planner sees)."""
    seen: set[str] = set()
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            continue
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}" if kind == "pods" else meta["name"]
        if key in seen:
            errors.append(
                f"{kind}[{i}] ({key}).metadata.name: duplicate {what}; each object appears once in snapshot.{kind}"
            )
        seen.add(key)


def _strings(
    raw: object, where: str, errors: list[str], labels: bool = True, field: str = ""
) -> dict[str, str]:
    """Labels (keys and values checked as Kubernetes does) or annotations (keys checked): string to string.
    ``where`` + ``field`` names them in an error (joined only then: this runs for every object)."""
    if raw is None:
        return {}
    try:
        # a key's validity does not depend on its value nor a value's on its key: each is checked once per parse
        # run (the pods of a Job repeat their label keys, and most of their values, from pod to pod)
        if raw.__class__ is dict and (
            not raw
            or _VALID_KEYS.issuperset(raw)
            and (
                _VALID_VALUES.issuperset(raw.values())
                if labels
                else all(v.__class__ is str for v in raw.values())
            )
        ):
            return raw
    except TypeError:
        pass  # an unhashable value: reported below
    where = f"{where}{field}"
    if not isinstance(raw, dict):
        errors.append(f'{where}: expected a mapping of string to string (quote values such as "true" or "4")')
        return {}
    before = len(errors)
    for k, v in raw.items():
        if not (isinstance(k, str) and isinstance(v, str)):
            del errors[before:]  # one line for the whole mapping
            errors.append(
                f'{where}: expected a mapping of string to string (quote values such as "true" or "4")'
            )
            return {}
        problem = None if k in _VALID_KEYS else label_key_problem(k)
        if problem is None and len(_VALID_KEYS) < _VALID_LIMIT:
            _VALID_KEYS.add(k)
        if problem is None and labels and v not in _VALID_VALUES:
            problem = label_value_problem(v)
            if problem is None and len(_VALID_VALUES) < _VALID_LIMIT:
                _VALID_VALUES.add(v)
        if problem:
            errors.append(f"{where}: {problem}")
    return raw if len(errors) == before else {}


_VALID_KEYS: set[str] = set()  # label and annotation keys found valid
_VALID_VALUES: set[str] = set()  # label values found valid
_VALID_LIMIT = 200_000  # each set stops growing there (a long-running controller sees ever new Job uids)


def _guard(parse, where: str, errors: list[str], *args):
    """``parse(*args)``; a value of the wrong kind deep inside an object becomes one error line, not a traceback.
    The parsers check the common mistakes themselves with precise messages; this catches the rest."""
    try:
        return parse(*args)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
        errors.append(
            f"{where}: a field holds the wrong kind of value ({e}); give the object as kubectl prints it "
            "(docs/snapshot.md)"
        )
        return None


def _items(value: object, where: str, errors: list[str]) -> list:
    """A kubectl List object or a plain array."""
    if isinstance(value, dict) and isinstance(value.get("items"), list):
        value = value["items"]
    if not isinstance(value, list):
        errors.append(f"snapshot.{where}: expected a list or a Kubernetes List object with items")
        return []
    return value


def _int(
    raw: dict, key: str, where: str, errors: list[str], default: int | None = None, minimum: int = 0
) -> int:
    value = raw.get(key, default)
    if value is None:
        errors.append(f"{where}.{key}: missing; expected an integer of at least {minimum}")
        return minimum
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        errors.append(f"{where}.{key}: expected an integer of at least {minimum}, got {value!r}")
        return minimum
    return value


def _groups(raw: object, errors: list[str]) -> list[Group]:
    if not isinstance(raw, list):
        errors.append("snapshot.groups: expected a list of node groups")
        return []
    out, seen = [], set()
    for i, g in enumerate(raw):
        w = f"groups[{i}]"
        if not isinstance(g, dict):
            errors.append(
                f"{w}: expected a group object {{name, region, zones, instance_type, min, max, desired}}"
            )
            continue
        name = g.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"{w}.name: missing; give the Auto Scaling group's name")
            continue
        w = f"groups[{i}] ({name})"
        if name in seen:
            errors.append(f"{w}.name: duplicate group name; each group appears once")
        seen.add(name)
        group = _guard(_group, w, errors, g, name, w, errors)
        if group:
            out.append(group)
    return out


def _group(g: dict, name: str, w: str, errors: list[str]) -> Group | None:
    n_err = len(errors)
    region = g.get("region")
    if not isinstance(region, str) or not region:
        errors.append(f"{w}.region: missing; give the AWS region, e.g. us-west-2")
    zones = g.get("zones") or []
    if not isinstance(zones, list) or not all(isinstance(z, str) for z in zones):
        errors.append(f"{w}.zones: expected a list of availability zones")
        zones = []
    itype = g.get("instance_type")
    if not isinstance(itype, str) or not itype:
        errors.append(f"{w}.instance_type: missing; give the EC2 instance type, e.g. p3.16xlarge")
        itype = ""
    before = len(errors)
    lo = _int(g, "min", w, errors)
    hi = _int(g, "max", w, errors)
    desired = _int(g, "desired", w, errors)
    if len(errors) == before:
        if hi < lo:
            errors.append(f"{w}.max: {hi} is below min {lo}; max must be at least min")
        elif not lo <= desired <= hi:
            errors.append(f"{w}.desired: {desired} is outside [min {lo}, max {hi}]")
    labels = _strings(g.get("labels"), f"{w}.labels", errors)
    taints = parse_taints(g.get("taints"), f"{w}.taints", errors)
    info = catalog.instance_types().get(itype)
    alloc_raw = g.get("allocatable")
    if alloc_raw is None:
        if info is None and itype:
            errors.append(
                f"{w}.instance_type: {itype!r} is not in the instance table (clusterspec/data/instance_types.yaml);"
                " give allocatable or use a listed type"
            )
        alloc_raw = info.allocatable() if info else {}
    allocatable = parse_resources(alloc_raw, f"{w}.allocatable", errors)
    if alloc_raw and "pods" not in allocatable:
        allocatable["pods"] = 110_000
    priority = g.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        errors.append(f"{w}.priority: expected an integer, got {priority!r}")
        priority = 0
    price = g.get("price_per_hour")
    if price is None and info is not None and isinstance(region, str):
        price = info.price_in(region)
    if price is not None and (
        isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) or price < 0
    ):
        # NaN (which JSON decoders accept) compares false with everything: it would sort groups at random
        errors.append(
            f"{w}.price_per_hour: expected a non-negative number of dollars per hour, got {price!r}"
        )
        price = None
    instances = []
    raw_instances = g.get("instances") or []
    if not isinstance(raw_instances, list):
        errors.append(f"{w}.instances: expected a list of {{id, state, launched_at}}")
        raw_instances = []
    for j, inst in enumerate(raw_instances):
        if not isinstance(inst, dict) or not isinstance(inst.get("id"), str):
            errors.append(f"{w}.instances[{j}]: expected {{id, state, launched_at}} with a string id")
            continue
        launched = parse_time(inst.get("launched_at"), f"{w}.instances[{j}].launched_at", errors)
        template = _template(inst.get("launch_template"), f"{w}.instances[{j}].launch_template", errors)
        instances.append(Instance(inst["id"], str(inst.get("state") or "InService"), launched, template))
    launch_template = _template(g.get("launch_template"), f"{w}.launch_template", errors)
    if len(errors) > n_err:
        return None
    template = {str(k): str(v) for k, v in labels.items()}
    template.setdefault(NODE_GROUP_LABEL, name)
    template.setdefault(INSTANCE_TYPE_KEY, itype)
    template.setdefault(REGION_KEY, region)
    template.setdefault("kubernetes.io/os", "linux")
    template.setdefault("kubernetes.io/arch", "amd64")
    if len(zones) == 1:
        template.setdefault(ZONE_KEY, zones[0])
    return Group(
        name,
        region,
        tuple(zones),
        itype,
        lo,
        hi,
        desired,
        template,
        taints,
        allocatable,
        priority,
        None if price is None else float(price),
        tuple(instances),
        template=launch_template,
    )


def _template(raw: object, where: str, errors: list[str]) -> LaunchTemplate | None:
    """``{"version": "7", "image": "ami-..."}`` (either may be left out): a launch template version and its
    image, of a group (what new instances get) or of an instance (what it came from)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not set(raw) <= {"version", "image"}:
        errors.append(f'{where}: expected {{"version": "7", "image": "ami-..."}} (either may be left out)')
        return None
    values = []
    for key in ("version", "image"):
        v = raw.get(key)
        if v is not None and (not isinstance(v, str | int) or isinstance(v, bool) or str(v) == ""):
            errors.append(f"{where}.{key}: expected a string, got {v!r}")
            return None
        values.append(None if v is None else str(v))
    return LaunchTemplate(*values) if any(values) else None


def _regions(raw: object, groups: list[Group], errors: list[str]) -> list[str]:
    if raw is None:
        out: list[str] = []
        for g in groups:
            if g.region not in out:
                out.append(g.region)
        return out
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        errors.append("snapshot.regions: expected the spill-over order as a list of region names")
        return []
    for g in groups:
        if g.region not in raw:
            errors.append(
                f"groups ({g.name}).region: {g.region!r} is not in snapshot.regions {raw}; add it there"
            )
    return list(raw)


def _meta(raw: object, where: str, errors: list[str]) -> tuple[dict, str | None]:
    if not isinstance(raw, dict):
        errors.append(f"{where}: expected a Kubernetes object, got {type(raw).__name__}")
        return {}, None
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        errors.append(f"{where}.metadata.name: missing; every object needs a name")
        return {}, None
    return meta, meta["name"]


def _node(raw: object, where: str, by_instance: dict, groups: set, errors: list[str]) -> Node | None:
    meta, name = _meta(raw, where, errors)
    if name is None:
        return None
    w = f"{where} ({name})"
    n_err = len(errors)
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    labels = _strings(meta.get("labels"), w, errors, field=".metadata.labels")
    annotations = _strings(meta.get("annotations"), w, errors, labels=False, field=".metadata.annotations")
    alloc_raw = status.get("allocatable")
    if alloc_raw is None:
        alloc_raw = status.get("capacity")
    if alloc_raw is None:
        errors.append(f"{w}.status.allocatable: missing; a node needs its allocatable resources")
    allocatable = parse_resources(alloc_raw, f"{w}.status.allocatable", errors)
    taints = parse_taints(spec.get("taints"), f"{w}.spec.taints", errors)
    conditions = status.get("conditions") or ()
    ready, changed = not conditions, None  # a node listed without conditions is taken as ready
    for cond in conditions:
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
            changed = parse_time(cond.get("lastTransitionTime"), f"{w}.status.conditions[Ready]", errors)
    created = parse_time(meta.get("creationTimestamp"), f"{w}.metadata.creationTimestamp", errors)
    provider = spec.get("providerID") or ""
    if not isinstance(provider, str):
        errors.append(f"{w}.spec.providerID: expected a string such as aws:///us-west-2a/i-0abc")
        provider = ""
    instance_id = zone = None
    if provider.startswith("aws://"):
        parts = provider[len("aws://") :].strip("/").split("/")
        instance_id = parts[-1] or None
        zone = parts[0] if len(parts) > 1 else None
    zone = labels.get(ZONE_KEY) or zone
    group = by_instance.get(instance_id) if instance_id else None
    if group is None and labels.get(NODE_GROUP_LABEL) in groups:
        group = labels[NODE_GROUP_LABEL]
    if len(errors) > n_err:
        return None
    return Node(
        name,
        dict(labels),
        dict(annotations),
        taints,
        allocatable,
        bool(spec.get("unschedulable")),
        ready,
        changed,
        created,
        instance_id,
        zone,
        labels.get(REGION_KEY),
        group,
    )


def _namespaces(raw: object, errors: list[str]) -> dict[str, dict[str, str]] | None:
    """Namespace name -> labels (``kubectl get namespaces -o json``), None when the snapshot has none."""
    if raw is None:
        return None
    out = {}
    for i, item in enumerate(_items(raw, "namespaces", errors)):
        meta, name = _meta(item, f"namespaces[{i}]", errors)
        if name is not None:
            out[name] = _strings(meta.get("labels"), f"namespaces[{i}] ({name}).metadata.labels", errors)
    return out


def _pod(
    raw: object,
    where: str,
    errors: list[str],
    namespaces: dict | None = None,
    memo: dict | None = None,
    storage: Storage | None = None,
    with_claims: bool = False,
) -> Pod | tuple[Pod, tuple] | None:
    """The parsed pod; ``with_claims``: (the pod, the claims it names), its shape not constrained by ``storage``
    (the caller does that: the storage may change while the pod does not)."""
    meta = raw.get("metadata") if raw.__class__ is dict else None  # (inline: once per pod)
    name = meta.get("name") if meta.__class__ is dict else None
    if name.__class__ is not str:
        meta, name = _meta(raw, where, errors)  # names what is wrong
        if name is None:
            return None
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        errors.append(f"{where}.metadata.namespace: expected a string")
        return None
    w = f"{where} ({namespace}/{name})"
    n_err = len(errors)
    spec = raw.get("spec")
    status = raw.get("status") or {}
    labels = _strings(meta.get("labels"), w, errors, field=".metadata.labels")
    annotations = _strings(meta.get("annotations"), w, errors, labels=False, field=".metadata.annotations")
    shape = parse_shape(spec, namespace, w, errors, namespaces, labels, memo)
    owner_kind, owner_name, controlled = _owner(meta.get("ownerReferences"), w, errors, memo)
    phase = status.get("phase") or "Pending"
    node_name, gates, priority, grace, local_names, claims = _spec_facts(spec, memo)
    if not isinstance(phase, str) or not (node_name is None or isinstance(node_name, str)):
        errors.append(f"{w}: status.phase and spec.nodeName must be strings")
        return None
    if phase == "Pending" and not node_name:
        if meta.get("deletionTimestamp"):
            phase = "Deleting"  # going away: nothing is launched for it
        elif gates:
            phase = "Gated"  # the scheduler does not consider it until its gates are removed
    if isinstance(priority, bool) or not isinstance(priority, int):
        errors.append(f"{w}.spec.priority: expected an integer, got {priority!r}")
    started = finished = None
    if node_name:
        started = parse_time(status.get("startTime"), f"{w}.status.startTime", errors)
        if phase in ("Succeeded", "Failed"):
            for cs in status.get("containerStatuses") or ():
                t = parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"), w, errors)
                if t and (finished is None or t > finished):
                    finished = t
    gang = gang_size = None
    if labels.get(POD_GROUP_LABEL):
        gang = f"podgroup:{namespace}/{labels[POD_GROUP_LABEL]}"
        size = annotations.get(POD_GROUP_SIZE_ANNOTATION)
        if size is not None:
            if not str(size).isdigit() or int(size) < 1:
                errors.append(
                    f"{w}.metadata.annotations.{POD_GROUP_SIZE_ANNOTATION}: {size!r} is not a positive integer"
                )
            else:
                gang_size = int(size)
    elif (job := labels.get(JOB_NAME_LABEL) or (owner_name if owner_kind == "Job" else None)) and (
        gang_flag := annotations.get(GANG_ANNOTATION)
    ) is not None:
        if gang_flag not in ("true", "false"):
            errors.append(
                f'{w}.metadata.annotations.{GANG_ANNOTATION}: {gang_flag!r} is not "true" or "false"'
            )
        elif gang_flag == "true":
            gang = f"job:{namespace}/{job}"
    evict = annotations.get(SAFE_TO_EVICT_ANNOTATION)
    nominated = status.get("nominatedNodeName") if phase == "Pending" and not node_name else None
    if nominated is not None and not isinstance(nominated, str):
        errors.append(f"{w}.status.nominatedNodeName: expected a node name")
    deleting = meta.get("deletionTimestamp")
    if deleting is not None:
        deleting = parse_time(deleting, f"{w}.metadata.deletionTimestamp", errors)
    if grace.__class__ is not int and (isinstance(grace, bool) or not isinstance(grace, int)) or grace < 0:
        errors.append(
            f"{w}.spec.terminationGracePeriodSeconds: expected a whole number of seconds, got {grace!r}"
        )
    local = False
    if local_names is _NOT_A_LIST:
        errors.append(f"{w}.spec.volumes: expected a list of volumes")
    elif local_names:
        listed = set(annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION, "").split(","))
        local = any(n not in listed for n in local_names)
    if len(errors) > n_err or shape is None:
        return None
    if claims and storage is not None and phase == "Pending" and not node_name and not with_claims:
        shape = constrained(shape, storage, namespace, claims, memo if memo is not None else {})
    pod = Pod(
        namespace,
        name,
        labels,
        phase,
        node_name,
        owner_kind,
        owner_name,
        owner_kind == "DaemonSet",
        MIRROR_ANNOTATION in annotations,
        None if evict is None else str(evict).lower() == "true",
        priority,
        shape,
        started,
        finished,
        gang,
        gang_size,
        f"{namespace}/{name}",
        nominated or None,
        deleting,
        grace,
        controlled,
        local,
        annotations.get(DO_NOT_DISRUPT_ANNOTATION) == "true",
    )
    return (pod, claims) if with_claims else pod


def _owner(refs: object, w: str, errors: list[str], memo: dict | None) -> tuple[str | None, str | None, bool]:
    """(kind, name, controlled) of the controlling owner reference (else the first one). ``memo``: by the list's
    identity, for lists valid before (a Job's pods share one list when decoded lean, lean.py ``lean_pods``)."""
    if memo is not None and refs.__class__ is list:
        hit = memo.get(id(refs))
        if hit is not None:
            return hit[1]
    owner_kind = owner_name = None
    controlled = False
    for ref in refs or ():
        kind, ref_name = ref.get("kind"), ref.get("name")
        if kind.__class__ is not str or ref_name.__class__ is not str:
            errors.append(f"{w}.metadata.ownerReferences: each needs a string kind and name")
            return owner_kind, owner_name, controlled
        if ref.get("controller") or owner_kind is None:
            owner_kind, owner_name = kind, ref_name
            controlled = controlled or ref.get("controller") is True
    out = (owner_kind, owner_name, controlled)
    if memo is not None and refs.__class__ is list:
        memo[id(refs)] = (refs, out)  # the entry keeps the list alive: its id is not reused
    return out


_NOT_A_LIST = object()  # spec.volumes of the wrong kind (reported per pod)


def _spec_facts(spec: object, memo: dict | None) -> tuple:
    """What the pod's spec says besides its shape: (nodeName, schedulingGates, priority,
    terminationGracePeriodSeconds, the names of its volumes that are local storage, the claims it names). Checked by the caller, per
    pod; ``memo``: by the spec dict's identity, as the shape (a Job's pods share one spec dict when decoded lean).

    Local storage: a hostPath volume, or an emptyDir not in memory (cluster-autoscaler: utils/drain/drain.go
    ``HasBlockingLocalStorage``, simulator/drainability/rules/localstorage); the pod's
    safe-to-evict-local-volumes annotation may list them."""
    if memo is not None and spec.__class__ is dict:
        hit = memo.get(id(spec))
        if hit is not None:
            return hit[1]
    s = spec or {}
    node_name = s.get("nodeName") or None  # a spec of the wrong kind fails here, as before it reads anything
    volumes = s.get("volumes")
    claims: tuple = ()
    if volumes is None:
        local: object = ()
    elif not isinstance(volumes, list):
        local = _NOT_A_LIST
    else:  # one pass: the local ones, and the claims named (a volume has one source)
        names, named = [], []
        for v in volumes:
            if v.__class__ is not dict:
                continue
            src = v.get("persistentVolumeClaim")
            if src is not None:
                if src.__class__ is dict and (claim := src.get("claimName")).__class__ is str:
                    named.append(claim)
            elif _is_local(v):
                names.append(v.get("name"))
        local, claims = tuple(names), tuple(named)
    grace = s.get("terminationGracePeriodSeconds", 30) if spec.__class__ is dict else 30
    out = (node_name, s.get("schedulingGates"), s.get("priority") or 0, grace, local, claims)
    if memo is not None and spec.__class__ is dict:
        memo[id(spec)] = (spec, out)  # the entry keeps the dict alive: its id is not reused
    return out


def _is_local(volume: dict) -> bool:
    if volume.get("hostPath") is not None:
        return True
    empty = volume.get("emptyDir")
    return isinstance(empty, dict) and empty.get("medium") != "Memory"


def _failures(raw: object, groups: set, errors: list[str]) -> list[Failure]:
    if not isinstance(raw, list):
        errors.append("snapshot.scaling_failures: expected a list of {group, reason, message, at, missing}")
        return []
    out = []
    for i, f in enumerate(raw):
        w = f"scaling_failures[{i}]"
        if not isinstance(f, dict):
            errors.append(f"{w}: expected {{group, reason, message, at, missing}}")
            continue
        n_err = len(errors)
        if f.get("group") not in groups:
            errors.append(f"{w}.group: {f.get('group')!r} is not one of the snapshot's groups")
        if f.get("reason") not in FAILURE_REASONS:
            errors.append(f"{w}.reason: {f.get('reason')!r} is not one of {', '.join(FAILURE_REASONS)}")
        at = parse_time(f.get("at"), f"{w}.at", errors)
        if at is None and len(errors) == n_err:
            errors.append(f"{w}.at: missing; give the time of the failed activity (ISO-8601)")
        missing = _int(f, "missing", w, errors, default=0)
        if len(errors) == n_err:
            out.append(Failure(f["group"], f["reason"], str(f.get("message") or ""), at, missing))
    return out


def _group_state(raw: object, groups: set, errors: list[str]) -> dict[str, GroupState]:
    if not isinstance(raw, dict):
        errors.append(
            "snapshot.group_state: expected {group: {failures, backoff_until, last_failure}} as a plan gave it"
        )
        return {}
    out = {}
    for name, s in raw.items():
        w = f"group_state.{name}"
        if name not in groups:
            continue  # a group that was removed from the cluster; its state is dropped
        if not isinstance(s, dict):
            errors.append(f"{w}: expected {{failures, backoff_until, last_failure}}")
            continue
        last = s.get("last_failure") or {}
        out[name] = GroupState(
            failures=_int(s, "failures", w, errors, default=0),
            backoff_until=parse_time(s.get("backoff_until"), f"{w}.backoff_until", errors),
            last_failure_at=parse_time(last.get("at"), f"{w}.last_failure.at", errors),
            last_reason=last.get("reason"),
            last_message=last.get("message"),
        )
    return out
