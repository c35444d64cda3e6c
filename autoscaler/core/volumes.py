"""Claims and volumes: what kube-scheduler's VolumeBinding plugin reads before it places a pod, so the planner
never buys a node for a pod the scheduler will not place (k8s.io/kubernetes pkg/scheduler/framework/plugins/
volumebinding: ``podHasPVCs``, ``GetPodVolumeClaims``, ``FindPodVolumes``; docs/planner.md, "Volumes").

A pod's claims either block it everywhere (a reason, in kube-scheduler's own words) or restrict the nodes it fits
(required node selector terms, ORed, which the caller ANDs into the pod's node affinity), or neither:

- a claim that is missing, lost or being deleted blocks (``podHasPVCs``);
- a claim not bound yet whose class binds Immediately (or has no class, or names a class that does not exist),
  or that names its volume before the PV controller completed the binding, blocks: "pod has unbound immediate
  PersistentVolumeClaims" (``GetPodVolumeClaims``); the PV controller binds it, not a new node;
- a bound claim restricts the nodes to its PersistentVolume's ``nodeAffinity`` (a local volume's node; EFS
  volumes have none); a bound claim whose volume is gone blocks (``checkBoundClaims``);
- a WaitForFirstConsumer claim not bound yet is bound by the scheduler where the pod goes: with a class that
  provisions, the planner assumes it binds wherever the class's ``allowedTopologies`` allow, as
  cluster-autoscaler does; with ``kubernetes.io/no-provisioner`` (static volumes, e.g. local ones) only where an
  available volume of that class is (``findMatchingVolumes``), and nowhere when there is none.

Which class is the default does not matter here: the API server writes it into a new claim's
``storageClassName`` (DefaultStorageClass admission), and the PV controller into older claims without a class;
until then kube-scheduler reads a claim without a class as Immediate, and so does the planner.

A snapshot without ``persistentvolumeclaims`` says nothing about claims: nothing is checked (hand-written
snapshots, the simulator's). Without ``persistentvolumes``, bound claims and static classes are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.names import BETA_STORAGE_CLASS_ANNOTATION, BIND_COMPLETED_ANNOTATION, NO_PROVISIONER
from autoscaler.core.podspec import PodShape, with_node_terms
from autoscaler.core.selectors import parse_requirements, requirement_holds

IMMEDIATE_UNBOUND = "pod has unbound immediate PersistentVolumeClaims"  # volumebinding.go PreFilter
PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"  # ErrReasonPVNotExist
)
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"  # ErrReasonNodeConflict: no node matches the volume
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"  # ErrReasonBindConflict
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
_NAMELESS = {"metadata.name": ""}  # the node CheckNodeAffinity matches a volume's node affinity against


@dataclass(frozen=True, slots=True)
class Claim:
    volume: str  # spec.volumeName ("" when none)
    storage_class: (
        str  # the beta annotation, else spec.storageClassName, else "" (GetPersistentVolumeClaimClass)
    )
    bound: bool  # volumeName and the bind-completed annotation (isPVCFullyBound)
    phase: str
    deleting: bool


@dataclass(frozen=True, slots=True)
class Volume:
    terms: tuple | None  # required nodeAffinity as node affinity terms (OR); None: any node
    claim: tuple[str, str] | None  # claimRef (namespace, name)
    storage_class: str
    phase: str


@dataclass(frozen=True, slots=True)
class StorageClass:
    wait: bool  # volumeBindingMode WaitForFirstConsumer
    static: bool  # provisioner kubernetes.io/no-provisioner
    terms: tuple | None  # allowedTopologies as node affinity terms (OR); None: anywhere


@dataclass(slots=True)
class Storage:
    """The snapshot's claims, volumes and classes, indexed."""

    claims: dict[tuple[str, str], Claim]
    volumes: dict[str, Volume] | None  # None: the snapshot has none, bound claims are not checked
    classes: dict[str, StorageClass]

    def constraint(self, namespace: str, names: tuple[str, ...]) -> tuple[str | None, tuple]:
        """(reason the pod is blocked everywhere or None, restrictions): each restriction a tuple of node affinity
        terms (OR) the node must match, ANDed with the pod's own."""
        claims = []
        for name in names:  # podHasPVCs: the first claim in error decides
            c = self.claims.get((namespace, name))
            if c is None:
                return f'persistentvolumeclaim "{name}" not found', ()
            if c.phase == "Lost":
                return (
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{c.volume}"',
                    (),
                )
            if c.deleting:
                return f'persistentvolumeclaim "{name}" is being deleted', ()
            claims.append((name, c))
        restrictions = []
        blocked = None
        for name, c in claims:  # GetPodVolumeClaims, then FindPodVolumes
            if c.bound:
                if self.volumes is None:
                    continue
                v = self.volumes.get(c.volume)
                if v is None:
                    blocked = blocked or PV_NOT_EXIST
                elif v.terms is NO_NODE:
                    blocked = blocked or NODE_CONFLICT
                elif v.terms is not None:
                    restrictions.append(v.terms)
                continue
            cls = self.classes.get(c.storage_class) if c.storage_class else None
            if cls is None or not cls.wait or c.volume:
                return IMMEDIATE_UNBOUND, ()  # prebound claims count as unbound immediate ones
            if cls.static:
                if self.volumes is None:
                    continue
                found = [
                    v
                    for v in self.volumes.values()
                    if v.storage_class == c.storage_class
                    and v.phase == "Available"
                    and v.claim in (None, (namespace, name))
                ]
                if not found:
                    blocked = blocked or NO_VOLUME_TO_BIND
                elif all(v.terms is not None for v in found):
                    restrictions.append(tuple(t for v in found for t in v.terms))
            elif cls.terms is not None:
                restrictions.append(cls.terms)
        return blocked, tuple(restrictions)


def constrained(
    shape: PodShape, storage: Storage, namespace: str, names: tuple[str, ...], memo: dict
) -> PodShape:
    """The pod's shape with what its claims add: a reason that blocks it, node affinity terms that restrict it
    (the shape itself when they add nothing). ``memo``: one parse's, so the pods of a Job that share their claims
    share one shape (a class)."""
    seen = (
        shape,
        namespace,
        names,
    )  # the pods of a Job: one answer for all of them (shapes hash by identity)
    hit = memo.get(seen)
    if hit is not None:
        return hit[1]
    reason, restrictions = storage.constraint(namespace, names)
    if reason is None and not restrictions:
        memo[seen] = (None, shape)
        return shape
    key = ("claims", id(shape), reason, restrictions)
    hit = memo.get(key)
    if hit is not None:
        memo[seen] = hit
        return hit[1]
    terms = shape.affinity_terms
    for r in restrictions:
        terms = and_terms(terms, r)
    out = with_node_terms(shape, terms, reason)
    memo[key] = memo[seen] = (shape, out)  # the entry keeps the shape alive: its id is not reused (``key``)
    return out


def and_terms(terms: tuple, restriction: tuple) -> tuple:
    """Node affinity terms (OR of (label requirements, field requirements)) ANDed with another set: every pair
    of terms joined (an empty set of terms is no restriction)."""
    restriction = tuple(b for b in restriction if b[0] or b[1])  # an empty term matches no node
    if not terms:
        return restriction or NO_NODE
    return tuple((a[0] + b[0], a[1] + b[1]) for a in terms if a[0] or a[1] for b in restriction) or NO_NODE


def _items(raw: object, where: str, errors: list[str]) -> list:
    if isinstance(raw, dict) and isinstance(raw.get("items"), list):
        raw = raw["items"]
    if not isinstance(raw, list):
        errors.append(f"snapshot.{where}: expected a list or a Kubernetes List object with items")
        return []
    return raw


def _named(obj: object, where: str, errors: list[str]) -> tuple[dict, str | None]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        errors.append(f"{where}.metadata.name: missing; every object needs a name")
        return {}, None
    return meta, meta["name"]


def _annotations(meta: dict) -> dict:
    a = meta.get("annotations")
    return a if isinstance(a, dict) else {}


NO_NODE = (((), ()),)  # node affinity terms that match no node: one empty term


def _terms(raw: object, where: str, errors: list[str]) -> tuple | None:
    """A volume's ``nodeAffinity.required`` as node affinity terms (OR); None: every node. kube-scheduler matches
    it against the node's labels alone (component-helpers storage/volume ``CheckNodeAffinity``: a node with no
    name), so ``matchFields`` are decided here against the name "": a term whose fields fail matches no node, and
    one whose fields hold is its label requirements (every node when it has none)."""
    if raw is None:
        return None
    terms = raw.get("nodeSelectorTerms") if isinstance(raw, dict) else None
    if not isinstance(terms, list) or not terms:
        errors.append(f"{where}.nodeSelectorTerms: expected a non-empty list of terms")
        return None
    out = []
    for i, t in enumerate(terms):
        t = t if isinstance(t, dict) else {}
        labels = parse_requirements(t.get("matchExpressions"), f"{where}.nodeSelectorTerms[{i}].matchExpressions",
                                    errors)  # fmt: skip
        fields = parse_requirements(
            t.get("matchFields"), f"{where}.nodeSelectorTerms[{i}].matchFields", errors
        )
        if not all(requirement_holds(r, _NAMELESS) for r in fields):
            continue
        if fields and not labels:
            return None
        out.append((labels, ()))
    return tuple(out) or NO_NODE


def _topologies(raw: object, where: str, errors: list[str]) -> tuple | None:
    """``allowedTopologies`` (terms of ``matchLabelExpressions`` {key, values}, ORed) as node affinity terms."""
    if not raw:
        return None
    if not isinstance(raw, list):
        errors.append(f"{where}: expected a list of {{matchLabelExpressions}}")
        return None
    out = []
    for i, t in enumerate(raw):
        exprs = t.get("matchLabelExpressions") if isinstance(t, dict) else None
        reqs = [
            {"key": e.get("key"), "operator": "In", "values": e.get("values")} if isinstance(e, dict) else e
            for e in exprs or ()
        ]
        out.append((parse_requirements(reqs, f"{where}[{i}].matchLabelExpressions", errors), ()))
    return tuple(out)


def parse_storage(data: dict, errors: list[str]) -> Storage | None:
    """The snapshot's ``persistentvolumeclaims``, ``persistentvolumes`` and ``storageclasses``; None when it has
    no claims listed (then nothing about claims is checked)."""
    if data.get("persistentvolumeclaims") is None:
        return None
    claims: dict[tuple[str, str], Claim] = {}
    for i, raw in enumerate(_items(data["persistentvolumeclaims"], "persistentvolumeclaims", errors)):
        meta, name = _named(raw, f"persistentvolumeclaims[{i}]", errors)
        if name is None:
            continue
        namespace = meta.get("namespace") or "default"
        w = f"persistentvolumeclaims[{i}] ({namespace}/{name})"
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            errors.append(f"{w}: spec and status must be objects, as kubectl prints them")
            continue
        annotations = _annotations(meta)
        volume = spec.get("volumeName") or ""
        cls = annotations.get(BETA_STORAGE_CLASS_ANNOTATION) or spec.get("storageClassName") or ""
        phase = status.get("phase") or "Pending"
        if not all(isinstance(v, str) for v in (volume, cls, phase)):
            errors.append(f"{w}: spec.volumeName, spec.storageClassName and status.phase must be strings")
            continue
        bound = bool(volume) and BIND_COMPLETED_ANNOTATION in annotations
        claims[(namespace, name)] = Claim(volume, cls, bound, phase, bool(meta.get("deletionTimestamp")))
    volumes = None
    if data.get("persistentvolumes") is not None:
        volumes = {}
        for i, raw in enumerate(_items(data["persistentvolumes"], "persistentvolumes", errors)):
            _, name = _named(raw, f"persistentvolumes[{i}]", errors)
            if name is None:
                continue
            w = f"persistentvolumes[{i}] ({name})"
            spec = raw.get("spec") or {}
            affinity = spec.get("nodeAffinity") if isinstance(spec, dict) else None
            if affinity is not None and not isinstance(affinity, dict):
                errors.append(f"{w}.spec.nodeAffinity: expected {{required: {{nodeSelectorTerms}}}}")
                continue
            terms = _terms((affinity or {}).get("required"), f"{w}.spec.nodeAffinity.required", errors)
            ref = spec.get("claimRef")
            claim = (ref.get("namespace") or "default", ref.get("name")) if isinstance(ref, dict) else None
            phase = (raw.get("status") or {}).get("phase") or "Pending"
            volumes[name] = Volume(terms, claim, spec.get("storageClassName") or "", phase)
    classes = {}
    for i, raw in enumerate(_items(data.get("storageclasses") or [], "storageclasses", errors)):
        meta, name = _named(raw, f"storageclasses[{i}]", errors)
        if name is None:
            continue
        w = f"storageclasses[{i}] ({name})"
        mode = raw.get("volumeBindingMode") or "Immediate"
        if mode not in BINDING_MODES:
            errors.append(f"{w}.volumeBindingMode: {mode!r} is not one of {', '.join(BINDING_MODES)}")
            continue
        terms = _topologies(raw.get("allowedTopologies"), f"{w}.allowedTopologies", errors)
        classes[name] = StorageClass(mode == "WaitForFirstConsumer", raw.get("provisioner") == NO_PROVISIONER,
                                     terms)  # fmt: skip
    return Storage(claims, volumes, classes)
