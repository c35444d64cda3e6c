"""Lean Kubernetes objects: the fields of a Pod, Node and PodDisruptionBudget that anything here reads, and nothing
else (what client-go's ``SetTransform`` and cluster-autoscaler's informer trimming do).

A real API server returns a training pod of 5-30 KiB (managedFields, env, volume mounts, probes, image, command,
container statuses, conditions); the planner and the controller read a few hundred bytes of it. The informers keep
objects through :func:`pod`, :func:`node` and :func:`pdb`, and snapshot files are decoded straight into these
types (:mod:`autoscaler.core.decode`), so memory and parsing follow the number of objects, not their size.
The result is still a ``kubectl get -o json`` item (a subset of its fields, in the same places), so
``autoscaler snapshot`` writes a file that replays the same plan.

The schema below *is* the kept-field list: each field names its reader. Add a field here when code starts reading
it (tests/autoscaler/core/test_lean.py checks on every planner case that the plan of the lean snapshot is the
plan of the full one, and that every annotation the code names is kept). Leaf fields are ``Any``: their values
are kept exactly as given (the parser checks them and reports bad ones); an object whose kept parts have the wrong
structure (a list where an object belongs) is kept whole, so the parser still reports it. Equal pod specs can be
kept as one shared dict (:func:`lean_pods`). From JSON, a pod is decoded as :data:`DecodedPod`, the same schema
with its spec leaves and owner references as JSON text, which is what the sharing goes by.

Dropped, for the record (nothing reads them; add them above with their reader when something does):
metadata.managedFields, generateName, finalizers and every annotation not named below;
containers' image, command, args, env, envFrom, volumeMounts, probes, lifecycle, securityContext; volumes other
than hostPath, emptyDir and persistentVolumeClaim (configMap, secret, projected: nothing about them can keep a pod
off a node), and of a persistentVolumeClaim volume all but its claimName; priorityClassName and preemptionPolicy (the API server resolves the class into spec.priority, which is
kept), schedulerName, serviceAccountName, dnsPolicy, hostname/subdomain; pod status conditions, IPs, qosClass and
the container statuses of containers that have not terminated; node images, nodeInfo, addresses,
daemonEndpoints, podCIDRs; PDB status conditions.
"""

from __future__ import annotations

import sys
from typing import Any, Union, get_args, get_origin

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

from autoscaler.core.names import (
    BETA_DEFAULT_CLASS_ANNOTATION,
    BETA_STORAGE_CLASS_ANNOTATION,
    BIND_COMPLETED_ANNOTATION,
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    DEFAULT_CLASS_ANNOTATION,
    DO_NOT_DISRUPT_ANNOTATION,
    DRIFTED_SINCE_ANNOTATION,
    GANG_ANNOTATION,
    IDLE_SINCE_ANNOTATION,
    MIRROR_ANNOTATION,
    POD_GROUP_SIZE_ANNOTATION,
    POD_SCALE_UP_DELAY_ANNOTATION,
    SAFE_TO_EVICT_ANNOTATION,
    SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    SCALE_DOWN_DISABLED_ANNOTATION,
    TO_BE_DELETED_SINCE_ANNOTATION,
)

# Every field is optional and left out when absent (UNSET), so an object keeps the keys it had.
_ = UNSET


class _Lean(Struct, omit_defaults=True):
    pass


# -- Pod --------------------------------------------------------------------------------------------------------
class PodAnnotations(_Lean):
    """The pod annotations read (core/snapshot.py ``_pod``; controller ``_holds_node``); others are dropped
    (kubectl.kubernetes.io/last-applied-configuration alone can be kilobytes)."""

    safe_to_evict: Any = field(default=_, name=SAFE_TO_EVICT_ANNOTATION)  # scale-down: pod blocks removal
    local_volumes: Any = field(default=_, name=SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION)  # _local_storage
    mirror: Any = field(default=_, name=MIRROR_ANNOTATION)  # static pod: never blocks, never counted
    group_size: Any = field(default=_, name=POD_GROUP_SIZE_ANNOTATION)  # PodGroup gang size
    gang: Any = field(default=_, name=GANG_ANNOTATION)  # a Job's pods as one gang
    do_not_disrupt: Any = field(default=_, name=DO_NOT_DISRUPT_ANNOTATION)  # scale-down: blocks removal
    scale_up_delay: Any = field(default=_, name=POD_SCALE_UP_DELAY_ANNOTATION)  # controller: minimum pod age


class OwnerReference(_Lean):
    apiVersion: Any = _  # kubectl shape (required by the API)
    kind: Any = _  # DaemonSet / Job / ReplicaSet: daemonset overhead, gangs, drainability
    name: Any = _  # the Job's name: gang key
    uid: Any = _  # kubectl shape (required by the API)
    controller: Any = _  # which reference is the controller


class PodMeta(_Lean):
    name: Any = _  # everything: the pod's key
    namespace: Any = _  # the key, pod affinity and spread namespaces
    uid: Any = _  # Events' involvedObject (adapters/kubernetes.py record_event)
    resourceVersion: Any = _  # Events' involvedObject; informer resourceVersion tracking
    labels: Any = _  # selectors, spread, affinity, gangs (job-name, pod-group)
    annotations: PodAnnotations | None | UnsetType = _
    ownerReferences: list[OwnerReference] | None | UnsetType = _
    deletionTimestamp: Any = _  # a pending pod being deleted is not demand; dead-node drain
    creationTimestamp: Any = _  # controller: the minimum age before a pod triggers a scale-up


class ContainerPort(_Lean):
    containerPort: Any = _  # checked as the API server does (podspec._ports)
    hostPort: Any = _  # NodePorts filter
    protocol: Any = _
    hostIP: Any = _


class Container(_Lean):
    name: Any = _  # kubectl shape (required by the API)
    resources: Any = _  # requests and limits (podspec.effective_requests)
    ports: list[ContainerPort] | None | UnsetType = _  # host ports (podspec._ports)
    restartPolicy: Any = _  # "Always" on an init container: a sidecar (podspec.effective_requests)


class ClaimSource(_Lean):
    claimName: Any = _  # the claim kube-scheduler's VolumeBinding looks up (core/volumes.py)


class Volume(_Lean):
    name: Any = _  # listed in safe-to-evict-local-volumes
    hostPath: Any = _  # local storage blocks scale-down (snapshot._local_storage)
    emptyDir: Any = _  # local storage unless medium Memory
    persistentVolumeClaim: ClaimSource | None | UnsetType = _  # its claim (core/volumes.py)


class PodSpec(_Lean):
    nodeName: Any = _  # bound or pending
    schedulingGates: Any = _  # gated pods are not demand
    priority: Any = _  # expendable pods, ordering
    terminationGracePeriodSeconds: Any = _  # scale-down drain time
    volumes: list[Volume] | None | UnsetType = _
    initContainers: list[Container] | None | UnsetType = _
    containers: list[Container] | None | UnsetType = _
    overhead: Any = _  # RuntimeClass overhead adds to requests
    resources: Any = _  # pod-level requests (PodLevelResources)
    nodeSelector: Any = _
    affinity: Any = _  # node affinity, pod affinity and anti-affinity
    tolerations: Any = _
    topologySpreadConstraints: Any = _


class Terminated(_Lean):
    finishedAt: Any = _  # when a finished pod left its node (idle time)


class ContainerState(_Lean):
    terminated: Terminated | None | UnsetType = _


class ContainerStatus(_Lean):
    name: Any = _  # kubectl shape
    state: ContainerState | None | UnsetType = _


class PodStatus(_Lean):
    phase: Any = _  # Pending / Running / Succeeded / Failed
    nominatedNodeName: Any = _  # the scheduler preempted for it: it will land there
    startTime: Any = _  # idle time of nodes
    containerStatuses: list[ContainerStatus] | None | UnsetType = _  # finishedAt of finished pods


class Pod(_Lean):
    apiVersion: Any = _
    kind: Any = _
    metadata: PodMeta | None | UnsetType = _
    spec: PodSpec | None | UnsetType = _
    status: PodStatus | None | UnsetType = _


# -- Node -------------------------------------------------------------------------------------------------------
class NodeAnnotations(_Lean):
    """The node annotations read (core/nodestate.py, core/scaledown.py, the controller)."""

    idle_since: Any = field(default=_, name=IDLE_SINCE_ANNOTATION)
    to_be_deleted_since: Any = field(default=_, name=TO_BE_DELETED_SINCE_ANNOTATION)
    scale_down_disabled: Any = field(default=_, name=SCALE_DOWN_DISABLED_ANNOTATION)
    drifted_since: Any = field(default=_, name=DRIFTED_SINCE_ANNOTATION)  # core/drift.py, the drift deadline
    cordoned: Any = field(default=_, name=CORDONED_BY_AUTOSCALER_ANNOTATION)  # controller: our cordon
    aborted: Any = field(default=_, name=SCALE_DOWN_ABORTED_ANNOTATION)  # controller: removal back-off


class NodeMeta(_Lean):
    name: Any = _
    uid: Any = _  # kubectl shape
    resourceVersion: Any = _  # informer resourceVersion tracking
    labels: Any = _  # group, zone, region, instance type; every selector
    annotations: NodeAnnotations | None | UnsetType = _
    creationTimestamp: Any = _  # registration timeouts, new-node grace


class NodeSpec(_Lean):
    providerID: Any = _  # the instance behind the node
    taints: Any = _  # scheduling; to-be-deleted marks
    unschedulable: Any = _  # cordoned


class NodeCondition(_Lean):
    type: Any = _  # Ready
    status: Any = _
    lastTransitionTime: Any = _  # how long unready


class NodeStatus(_Lean):
    allocatable: Any = _  # capacity for pods
    capacity: Any = _  # when allocatable is missing
    conditions: list[NodeCondition] | None | UnsetType = (
        _  # Ready (a node without conditions counts as ready)
    )


class Node(_Lean):
    apiVersion: Any = _
    kind: Any = _
    metadata: NodeMeta | None | UnsetType = _
    spec: NodeSpec | None | UnsetType = _
    status: NodeStatus | None | UnsetType = _


# -- PodDisruptionBudget ----------------------------------------------------------------------------------------
class PdbMeta(_Lean):
    name: Any = _
    namespace: Any = _
    uid: Any = _
    resourceVersion: Any = _
    labels: Any = _


class PdbStatus(_Lean):
    disruptionsAllowed: Any = _
    currentHealthy: Any = _
    desiredHealthy: Any = _
    expectedPods: Any = _
    observedGeneration: Any = _


class Pdb(_Lean):
    """Carried into snapshots (and so to replays) with its selector, budget and status; evictions themselves are
    judged by the API server."""

    apiVersion: Any = _
    kind: Any = _
    metadata: PdbMeta | None | UnsetType = _
    spec: Any = _  # selector, minAvailable / maxUnavailable, unhealthyPodEvictionPolicy
    status: PdbStatus | None | UnsetType = _


# -- PersistentVolumeClaim, PersistentVolume, StorageClass (core/volumes.py: what VolumeBinding reads) ----------
class ClaimAnnotations(_Lean):
    bind_completed: Any = field(default=_, name=BIND_COMPLETED_ANNOTATION)  # bound: volumeName and this
    beta_class: Any = field(
        default=_, name=BETA_STORAGE_CLASS_ANNOTATION
    )  # the class, before storageClassName


class ClaimMeta(_Lean):
    name: Any = _
    namespace: Any = _
    uid: Any = _
    resourceVersion: Any = _  # informer resourceVersion tracking
    annotations: ClaimAnnotations | None | UnsetType = _
    deletionTimestamp: Any = _  # a claim being deleted blocks its pods


class ClaimSpec(_Lean):
    volumeName: Any = _  # the volume it is (or is to be) bound to
    storageClassName: Any = _  # its class: the binding mode


class ClaimStatus(_Lean):
    phase: Any = _  # Pending / Bound / Lost


class Claim(_Lean):
    apiVersion: Any = _
    kind: Any = _
    metadata: ClaimMeta | None | UnsetType = _
    spec: ClaimSpec | None | UnsetType = _
    status: ClaimStatus | None | UnsetType = _


class VolumeMeta(_Lean):
    name: Any = _
    uid: Any = _
    resourceVersion: Any = _


class ClaimRef(_Lean):
    namespace: Any = _  # the claim it is bound or reserved to
    name: Any = _


class VolumeSpec(_Lean):
    nodeAffinity: Any = _  # the nodes it can be used on (a local volume's node)
    claimRef: ClaimRef | None | UnsetType = _  # bound or reserved to: not available to other claims
    storageClassName: Any = _  # static volumes of a WaitForFirstConsumer class


class VolumeStatus(_Lean):
    phase: Any = _  # Available / Bound / Released / Failed


class PersistentVolume(_Lean):
    apiVersion: Any = _
    kind: Any = _
    metadata: VolumeMeta | None | UnsetType = _
    spec: VolumeSpec | None | UnsetType = _
    status: VolumeStatus | None | UnsetType = _


class ClassAnnotations(_Lean):
    default: Any = field(default=_, name=DEFAULT_CLASS_ANNOTATION)  # the default class
    beta_default: Any = field(default=_, name=BETA_DEFAULT_CLASS_ANNOTATION)


class ClassMeta(_Lean):
    name: Any = _
    uid: Any = _
    resourceVersion: Any = _
    annotations: ClassAnnotations | None | UnsetType = _


class StorageClass(_Lean):
    apiVersion: Any = _
    kind: Any = _
    metadata: ClassMeta | None | UnsetType = _
    provisioner: Any = _  # kubernetes.io/no-provisioner: static volumes only
    volumeBindingMode: Any = _  # Immediate / WaitForFirstConsumer
    allowedTopologies: Any = _  # where it provisions


# -- decoding ---------------------------------------------------------------------------------------------------
def _variant(cls: type[Struct], name: str, retype) -> type[Struct]:
    """A copy of the Struct ``cls`` named ``name``, each field's type replaced by ``retype(field name, type)``;
    names, defaults and encoded names as in ``cls``."""
    info = msgspec.structs.fields(cls)
    fields = [(f.name, retype(f.name, f.type), f.default) for f in info]
    rename = {f.name: f.encode_name for f in info if f.encode_name != f.name} or None
    return msgspec.defstruct(name, fields, bases=(_Lean,), module=__name__, rename=rename)


def _raw_leaves(t: Any, memo: dict) -> Any:
    """``t`` with every ``Any`` leaf of its Structs as ``Raw``: the decoder keeps the leaf's JSON text (a slice
    of the input) instead of building its dicts, lists and strings."""
    if t is Any:
        return Raw | UnsetType
    if isinstance(t, type) and issubclass(t, Struct):
        if t not in memo:
            memo[t] = _variant(t, f"Raw{t.__name__}", lambda _, ft: _raw_leaves(ft, memo))
        return memo[t]
    args = get_args(t)
    if get_origin(t) is list:
        return list[_raw_leaves(args[0], memo)]
    if args:  # a union
        return Union[tuple(_raw_leaves(a, memo) for a in args)]  # noqa: UP007 (built from a tuple)
    return t


_RAW: dict = {}
# What the snapshot file and list/watch decoders build for a pod (autoscaler.core.decode): the schema above, with
# the spec's leaves and the owner references as JSON text. A Job's pods repeat the same spec and owner references,
# so the text is the key under which they are shared (lean_pods), and only the first pod's is decoded into values.
DecodedPodSpec = _raw_leaves(PodSpec, _RAW)
DecodedPodMeta = _variant(
    PodMeta, "DecodedPodMeta", lambda name, t: Raw | UnsetType if name == "ownerReferences" else t
)
_DECODED_PARTS = {"metadata": DecodedPodMeta | None | UnsetType, "spec": DecodedPodSpec | None | UnsetType}
DecodedPod = _variant(Pod, "DecodedPod", lambda name, t: _DECODED_PARTS.get(name, t))


# -- transforms -------------------------------------------------------------------------------------------------
SHARED_SPECS_LIMIT = 50_000  # distinct pod specs remembered per cache (then it starts afresh)
_JSON = msgspec.json.Encoder()
_OWNERS = list[OwnerReference]


def _trim_status(status: object) -> None:
    """Drop the container statuses of containers that have not terminated (only finishedAt is read)."""
    statuses = status.get("containerStatuses") if status.__class__ is dict else None
    if statuses:
        kept = [cs for cs in statuses if (cs.get("state") or {}).get("terminated")]
        if kept:
            status["containerStatuses"] = kept
        else:
            del status["containerStatuses"]


def _owners(text: bytes) -> object:
    """Owner references from their JSON text, trimmed to the schema (as given when their structure is odd: the
    parser reports them)."""
    value = msgspec.json.decode(text)
    try:
        return _interned(msgspec.to_builtins(msgspec.convert(value, _OWNERS)))
    except msgspec.ValidationError:
        return value


def _pod_dict(p: Pod | DecodedPod, shared: dict | None) -> dict:
    """A decoded pod (:data:`DecodedPod` from JSON, :class:`Pod` from a dict) as a kubectl-shaped dict. Equal
    specs are one dict (the pods of a Job or ReplicaSet), kept in ``shared`` (one parse's or one cache's): the
    cache holds each spec once, and the parser works out each spec's shape once; so are equal owner reference
    lists. Nothing changes a cached object in place (the informers replace whole objects), so sharing is safe."""
    if shared is None:
        shared = {}
    spec, one = p.spec, None
    if spec is not None and spec is not UNSET:
        # trimmed before the key: the projected token volume's name (kube-api-access-xxxxx) is per pod; of the
        # volumes only hostPath, emptyDir and persistentVolumeClaim ones are read (configMap, secret, projected:
        # nothing about them keeps a pod off a node)
        vols = spec.volumes
        if vols:
            kept = [
                v
                for v in vols
                if v.hostPath is not UNSET or v.emptyDir is not UNSET or v.persistentVolumeClaim is not UNSET
            ]
            if len(kept) != len(vols):
                spec.volumes = kept
        # the key is the spec's JSON (Raw leaves go in as they were read; JSON texts delimit themselves, so equal
        # keys are equal specs), and the first pod's spec dict is decoded from it
        key = _JSON.encode(spec)
        one = shared.get(key)
        if one is None:
            if len(shared) >= SHARED_SPECS_LIMIT:
                shared.clear()
            one = shared[key] = msgspec.json.decode(key)
        p.spec = UNSET
    meta = p.metadata
    refs = meta.ownerReferences if meta is not None and meta is not UNSET else None
    # the pods of a Job have one owner: one list for all of them, as for the spec (a Raw is never empty)
    if refs:
        key = b"owners" + _JSON.encode(refs)
        owners = shared.get(key)
        if owners is None:
            owners = shared[key] = (
                _owners(key[6:]) if refs.__class__ is Raw else _interned(msgspec.to_builtins(refs))
            )
        meta.ownerReferences = UNSET
    out = msgspec.to_builtins(p)
    if one is not None:
        out["spec"] = one
    if refs:
        out["metadata"]["ownerReferences"] = owners
    _trim_status(out.get("status"))
    return out


def lean_pods(items: list[Pod | DecodedPod], shared: dict | None = None) -> list[dict]:
    """Decoded pods as kubectl-shaped dicts; ``shared``: a dict in which equal specs are kept once."""
    return [_pod_dict(p, shared) for p in items]


def _interned(value: object) -> object:
    if value.__class__ is str:
        return sys.intern(value)
    if value.__class__ is dict:
        return {sys.intern(k) if k.__class__ is str else k: _interned(v) for k, v in value.items()}
    if value.__class__ is list:
        return [_interned(v) for v in value]
    return value


def interned(obj: dict) -> dict:
    """The object with its strings interned (its spec aside when it is a pod's, shared already): the pods of a
    Job repeat the same label keys and values, namespace and phase, and so do nodes their labels and
    conditions; one copy of each string in the cache instead of one per object (about a third of a lean pod).
    Interned strings are released when no object holds them any more. For the informers' caches, which live for
    the process; a one-shot ``autoscaler plan`` does not pay for it."""
    if obj.__class__ is not dict:
        return obj
    out = {}
    for k, v in obj.items():
        if k == "metadata" and v.__class__ is dict:  # owner references may be shared already (lean_pods)
            v = {sys.intern(mk): mv if mk == "ownerReferences" else _interned(mv) for mk, mv in v.items()}
        elif not (k == "spec" and "containers" in (v or ())):  # a pod's spec is shared already
            v = _interned(v)
        out[sys.intern(k)] = v
    return out


SHARED_PARTS_LIMIT = 20_000  # distinct parts remembered per cache by share_parts (then it starts afresh)
_MSGPACK = msgspec.msgpack.Encoder()  # part keys: tells 1, 1.0, True and "1" apart


def _shared_part(value: object, where: str, table: dict) -> object:
    if value.__class__ is not dict and value.__class__ is not list:
        return value
    if len(table) >= SHARED_PARTS_LIMIT:
        table.clear()  # the parts of objects gone are not kept for ever; those in the cache stay shared
    return table.setdefault((where, _MSGPACK.encode(value)), value)


def share_parts(obj: dict, table: dict, done: dict | None = None) -> dict:
    """The object with its parts that are often equal between objects kept once in ``table``, for the
    informers' caches (which live for the process), next to the whole specs :func:`lean_pods` shares.

    A pod's spec holds its ``nodeName``, so the pods of one Job on a thousand nodes have a thousand specs; their
    containers, tolerations, affinity and volumes are equal, and after this each is one object for all of them
    (the spec dict itself stays one per distinct spec). Likewise a pod's annotations (after :func:`pod`, almost
    always the same few or none) and a node's allocatable and capacity (equal on every node of an instance type).
    Parts are only replaced by equal ones (nothing here changes a value), and nothing changes a cached object in
    place (the informers replace whole objects), so sharing is safe. ``table`` holds each distinct part once (at
    most ``SHARED_PARTS_LIMIT``); ``done``, for one list, the specs done already (by id: it holds them, so an id
    stays its object's), as the pods of a Job on one node share their spec."""
    if obj.__class__ is not dict:
        return obj
    meta, spec, status = obj.get("metadata"), obj.get("spec"), obj.get("status")
    if meta.__class__ is dict and "annotations" in meta:
        meta["annotations"] = _shared_part(meta["annotations"], "metadata.annotations", table)
    if spec.__class__ is dict and "containers" in spec and (done is None or done.get(id(spec)) is not spec):
        for k, v in spec.items():
            if v.__class__ is dict or v.__class__ is list:
                spec[k] = _shared_part(v, k, table)
        if done is not None:
            done[id(spec)] = spec
    if status.__class__ is dict and "allocatable" in status:  # a node's
        for k in ("allocatable", "capacity"):
            if k in status:
                status[k] = _shared_part(status[k], k, table)
    return obj


def _convert(obj: object, schema: type) -> Struct | None:
    if not isinstance(obj, dict):
        return None
    try:
        return msgspec.convert(obj, schema)
    except msgspec.ValidationError:
        return None  # kept whole: the parser names what is wrong with it


def pod(obj: dict, shared: dict | None = None) -> dict:
    """The lean copy of a Pod (the argument is left as it was); ``shared`` as for :func:`lean_pods`."""
    p = _convert(obj, Pod)
    return obj if p is None else _pod_dict(p, shared)


def node(obj: dict, shared: dict | None = None) -> dict:
    """The lean copy of a Node."""
    n = _convert(obj, Node)
    return obj if n is None else msgspec.to_builtins(n)


def pdb(obj: dict, shared: dict | None = None) -> dict:
    """The lean copy of a PodDisruptionBudget."""
    b = _convert(obj, Pdb)
    return obj if b is None else msgspec.to_builtins(b)


def _lean(schema: type):
    def transform(obj: dict, shared: dict | None = None) -> dict:
        """The lean copy of the object (the argument is left as it was)."""
        o = _convert(obj, schema)
        return obj if o is None else msgspec.to_builtins(o)

    return transform


# the schemas of objects given as dicts (msgspec.convert), and of objects read from JSON
STORAGE = {"PersistentVolumeClaim": Claim, "PersistentVolume": PersistentVolume, "StorageClass": StorageClass}
SCHEMAS = {"Pod": Pod, "Node": Node, "PodDisruptionBudget": Pdb, **STORAGE}
DECODING = {"Pod": DecodedPod, "Node": Node, "PodDisruptionBudget": Pdb, **STORAGE}
TRANSFORMS = {
    "Pod": pod,
    "Node": node,
    "PodDisruptionBudget": pdb,
    **{k: _lean(v) for k, v in STORAGE.items()},
}
