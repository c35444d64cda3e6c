"""Every kind the emulator serves, and the discovery documents kubectl and client-go read.

One table, no opt-in kinds: what this project's clients (the autoscaler, ``lab``, ``provision``, ``kubectl apply``
of the manifests ``invoke up`` deploys) and cluster-autoscaler's informers (its lister registry and the scheduler
framework's shared informers: pods, nodes, PDBs, DaemonSets, ReplicationControllers, Jobs, ReplicaSets,
StatefulSets, Services, PersistentVolumes and claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
VolumeAttachments, Namespaces, the DRA kinds) list, watch and write, with the group, version, scope, short names,
verbs and subresources kube-apiserver's discovery gives them (``kubectl api-resources`` of a 1.35 cluster).

Custom resources come from CustomResourceDefinitions, as on a real server (:func:`register_crd`).
"""

from __future__ import annotations

from dataclasses import dataclass

K8S_MINOR = 35
K8S_VERSION = {
    "major": "1",
    "minor": str(K8S_MINOR),
    "emulationMajor": "1",
    "emulationMinor": str(K8S_MINOR),
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": str(K8S_MINOR - 1),
    "gitVersion": f"v1.{K8S_MINOR}.8",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-11-12T00:00:00Z",
    "goVersion": "go1.25.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}

ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True)
class Resource:
    group: str  # "" for core
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ALL
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # status, scale, ... (discovery lists them as <plural>/<sub>)
    categories: tuple[str, ...] = ()
    store: str = ""  # the model store's kind (the plural; ``plural.group`` for custom resources)
    custom: bool = False  # defined by a CustomResourceDefinition

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def kind_store(self) -> str:
        return self.store or self.plural

    @property
    def group_resource(self) -> str:
        """``plural.group`` as error messages and RBAC name the resource (``jobs.batch``, ``pods``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _r(group, version, plural, kind, namespaced, *, verbs=ALL, short=(), sub=("status",), cat=(), store=""):
    return Resource(group, version, plural, kind, namespaced, tuple(verbs), tuple(short), tuple(sub), tuple(cat),
                    store)  # fmt: skip


RESOURCES: list[Resource] = [
    # core/v1
    _r("", "v1", "pods", "Pod", True, short=("po",), cat=("all",),
       sub=("status", "binding", "eviction", "log", "ephemeralcontainers", "resize", "exec", "attach",
            "portforward", "proxy")),
    _r("", "v1", "nodes", "Node", False, short=("no",), sub=("status", "proxy")),
    _r("", "v1", "namespaces", "Namespace", False, short=("ns",), sub=("status", "finalize"),
       verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "events", "Event", True, short=("ev",), sub=()),
    _r("", "v1", "configmaps", "ConfigMap", True, short=("cm",), sub=()),
    _r("", "v1", "secrets", "Secret", True, sub=()),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, short=("sa",), sub=("token",)),
    _r("", "v1", "services", "Service", True, short=("svc",), cat=("all",), sub=("status", "proxy"),
       verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")),
    _r("", "v1", "endpoints", "Endpoints", True, short=("ep",), sub=()),
    _r("", "v1", "persistentvolumes", "PersistentVolume", False, short=("pv",)),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short=("pvc",)),
    _r("", "v1", "replicationcontrollers", "ReplicationController", True, short=("rc",), cat=("all",),
       sub=("status", "scale")),
    _r("", "v1", "resourcequotas", "ResourceQuota", True, short=("quota",)),
    _r("", "v1", "limitranges", "LimitRange", True, short=("limits",), sub=()),
    _r("", "v1", "podtemplates", "PodTemplate", True, sub=()),
    _r("", "v1", "bindings", "Binding", True, verbs=CREATE_ONLY, sub=()),
    # apps/v1
    _r("apps", "v1", "deployments", "Deployment", True, short=("deploy",), cat=("all",), sub=("status", "scale")),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, short=("rs",), cat=("all",), sub=("status", "scale")),
    _r("apps", "v1", "statefulsets", "StatefulSet", True, short=("sts",), cat=("all",), sub=("status", "scale")),
    _r("apps", "v1", "daemonsets", "DaemonSet", True, short=("ds",), cat=("all",)),
    _r("apps", "v1", "controllerrevisions", "ControllerRevision", True, sub=()),
    # batch/v1
    _r("batch", "v1", "jobs", "Job", True, cat=("all",), store="jobs"),
    _r("batch", "v1", "cronjobs", "CronJob", True, short=("cj",), cat=("all",), store="cronjobs"),
    # autoscaling
    _r("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, short=("hpa",),
       cat=("all",)),
    # policy/v1
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short=("pdb",)),
    # coordination, events, discovery
    _r("coordination.k8s.io", "v1", "leases", "Lease", True, sub=()),
    _r("events.k8s.io", "v1", "events", "Event", True, short=("ev",), sub=(), store="events"),
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True, sub=()),
    # storage
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short=("sc",), sub=()),
    _r("storage.k8s.io", "v1", "csinodes", "CSINode", False, sub=()),
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False, sub=()),
    _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True, sub=()),
    _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    _r("storage.k8s.io", "v1", "volumeattributesclasses", "VolumeAttributesClass", False, short=("vac",), sub=()),
    # RBAC
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True, sub=()),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, sub=()),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, sub=()),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, sub=()),
    # certificates, authentication, authorization
    _r("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", False,
       short=("csr",), sub=("status", "approval")),
    _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=CREATE_ONLY, sub=()),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=CREATE_ONLY,
       sub=()),
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
       verbs=CREATE_ONLY, sub=()),
    _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
       verbs=CREATE_ONLY, sub=()),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=CREATE_ONLY,
       sub=()),
    _r("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", True,
       verbs=CREATE_ONLY, sub=()),
    # scheduling, node, networking
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=("pc",), sub=()),
    _r("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, sub=()),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, short=("netpol",), sub=()),
    _r("networking.k8s.io", "v1", "ingresses", "Ingress", True, short=("ing",)),
    _r("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False, sub=()),
    # admission registration, API extensions
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
       False, sub=()),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", False, sub=()),
    _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False),
    _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
       "ValidatingAdmissionPolicyBinding", False, sub=()),
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       short=("crd", "crds")),
    # dynamic resource allocation (resource.k8s.io/v1 since 1.34): the scheduler framework's DRA informers
    _r("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, sub=()),
    _r("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True),
    _r("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True, sub=()),
    _r("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False, sub=()),
]  # fmt: skip


def _store_name(r: Resource) -> str:
    """Built-in plurals are unique but for Events, whose two versions share one store (as etcd holds one)."""
    return r.store or r.plural


RESOURCES = [Resource(**{**r.__dict__, "store": _store_name(r)}) for r in RESOURCES]
BY_PATH: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_STORE: dict[str, Resource] = {}
for _res in RESOURCES:
    BY_STORE.setdefault(_res.store, _res)
CLUSTER_SCOPED_STORES = frozenset(r.store for r in RESOURCES if not r.namespaced)
# subresources whose kind is not the parent's (discovery: group, version, kind)
SUB_KINDS = {
    ("pods", "eviction"): ("policy", "v1", "Eviction"),
    ("pods", "binding"): ("", "v1", "Binding"),
    ("serviceaccounts", "token"): ("authentication.k8s.io", "v1", "TokenRequest"),
    ("deployments", "scale"): ("autoscaling", "v1", "Scale"),
    ("replicasets", "scale"): ("autoscaling", "v1", "Scale"),
    ("statefulsets", "scale"): ("autoscaling", "v1", "Scale"),
    ("replicationcontrollers", "scale"): ("autoscaling", "v1", "Scale"),
}
SUB_VERBS = {
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "approval": ("get", "patch", "update"),
    "finalize": ("update",),
    "eviction": ("create",),
    "binding": ("create",),
    "token": ("create",),
    "log": ("get",),
    "ephemeralcontainers": ("get", "patch", "update"),
    "resize": ("get", "patch", "update"),
    "exec": ("create", "get"),
    "attach": ("create", "get"),
    "portforward": ("create", "get"),
    "proxy": ("create", "delete", "get", "patch", "update"),
}


def register_crd(crd: dict) -> list[Resource]:
    """Serve the kinds of a CustomResourceDefinition (every served version); returns what was added."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    added = []
    for v in spec.get("versions") or ():
        if not v.get("served", True):
            continue
        sub = tuple(k for k in ("status", "scale") if k in (v.get("subresources") or {}))
        res = Resource(
            group,
            v["name"],
            names.get("plural", ""),
            names.get("kind", ""),
            spec.get("scope", "Namespaced") == "Namespaced",
            ALL,
            tuple(names.get("shortNames") or ()),
            sub,
            tuple(names.get("categories") or ()),
            f"{names.get('plural', '')}.{group}",
            True,
        )
        key = (res.group, res.version, res.plural)
        old = BY_PATH.get(key)
        if old is not None and not old.custom:
            continue  # a CRD never shadows a built-in kind
        if old is not None:
            RESOURCES.remove(old)
        RESOURCES.append(res)
        BY_PATH[key] = res
        BY_STORE.setdefault(res.store, res)
        added.append(res)
    return added


def unregister_crd(crd: dict) -> None:
    spec = crd.get("spec") or {}
    plural = (spec.get("names") or {}).get("plural", "")
    for key, res in list(BY_PATH.items()):
        if res.custom and res.group == spec.get("group") and res.plural == plural:
            del BY_PATH[key]
            RESOURCES.remove(res)
            if BY_STORE.get(res.store) is res:
                del BY_STORE[res.store]


def preferred(group: str, plural: str) -> Resource | None:
    return next((r for r in RESOURCES if r.group == group and r.plural == plural), None)


def by_kind(api_version: str, kind: str) -> Resource | None:
    group, _, version = api_version.rpartition("/")
    return next((r for r in RESOURCES if r.group == group and r.version == version and r.kind == kind), None)


def resource_list(group: str, version: str) -> dict | None:
    """An APIResourceList for /api/v1 or /apis/<group>/<version>; None when not served."""
    rs = [r for r in RESOURCES if r.group == group and r.version == version]
    if not rs:
        return None
    items = []
    for r in rs:
        entry = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entry["storageVersionHash"] = _hash(f"{r.group}/{r.version}/{r.kind}")
        items.append(entry)
        for sub in r.subresources:
            sub_entry = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(SUB_VERBS.get(sub, ("get",))),
            }
            other = SUB_KINDS.get((r.plural, sub))
            if other:
                sub_entry["kind"] = other[2]
                if other[0] != group or other[1] != version:
                    sub_entry.update(group=other[0], version=other[1])
            items.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }


def _hash(text: str) -> str:
    import base64
    import hashlib

    return base64.b64encode(hashlib.sha256(text.encode()).digest()[:8]).decode()


def api_versions(server_address: str) -> dict:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list() -> dict:
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    out = []
    for name, versions in groups.items():
        gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        out.append({"name": name, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def api_group(name: str) -> dict | None:
    for g in api_group_list()["groups"]:
        if g["name"] == name:
            return {"kind": "APIGroup", "apiVersion": "v1", **g}
    return None
