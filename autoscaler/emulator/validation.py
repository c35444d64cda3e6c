"""Field validation of written objects, with kube-apiserver's messages (its rules for the fields clients of this
project write; pkg/apis/*/validation, apimachinery pkg/util/validation and pkg/api/validation).

An object that fails is refused with 422 Invalid, the message ``<Kind> "<name>" is invalid: <field>: <detail>``
(several errors in brackets, comma-separated) and one cause per error, as apimachinery's ``errors.NewInvalid``
builds them from a ``field.ErrorList``. Updates are checked against the stored object too: immutable fields
(a workload's selector, a Job's template, a RoleBinding's roleRef, a Service's clusterIP, a pod's spec beyond the
mutable fields) keep their value.
"""

from __future__ import annotations

import json
import re

from autoscaler.model.quantity import parse_quantity
from autoscaler.model.store import Invalid

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
ENV_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must "
    "not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation "
    "is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
IMMUTABLE = "field is immutable"
# names are RFC 1123 labels for Namespaces, RFC 1035 labels for Services, subdomains for the rest
LABEL_NAMES = {"namespaces"}
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
    "is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
# RBAC names are path segments (``system:kube-scheduler``): anything but "." and ".." and without "/" or "%"
PATH_NAMES = {"roles", "rolebindings", "clusterroles", "clusterrolebindings", "certificatesigningrequests"}
WORKLOADS = {"deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "replicationcontrollers"}
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)  # fmt: skip


def _show(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value) if isinstance(value, list) else str(value)


class Errors(list):
    def required(self, field: str, detail: str = "") -> None:
        self.append((field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else "")))

    def invalid(self, field: str, value, detail: str) -> None:
        self.append((field, "FieldValueInvalid", f"Invalid value: {_show(value)}: {detail}"))

    def unsupported(self, field: str, value, supported) -> None:
        shown = ", ".join(f'"{s}"' for s in supported)
        self.append(
            (field, "FieldValueNotSupported", f"Unsupported value: {_show(value)}: supported values: {shown}")
        )

    def duplicate(self, field: str, value) -> None:
        self.append((field, "FieldValueDuplicate", f"Duplicate value: {_show(value)}"))

    def not_found(self, field: str, value) -> None:
        self.append((field, "FieldValueNotFound", f"Not found: {_show(value)}"))

    def forbidden(self, field: str, detail: str) -> None:
        self.append((field, "FieldValueForbidden", f"Forbidden: {detail}"))

    def raise_for(self, kind: str, name: str) -> None:
        if not self:
            return
        parts = [f"{field}: {message}" for field, _, message in self]
        shown = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        err = Invalid(f'{kind} "{name}" is invalid: {shown}')
        err.details = {
            "name": name,
            "kind": kind,
            "causes": [{"reason": r, "message": m, "field": f} for f, r, m in self],
        }
        raise err


def _qualified_name(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return False
    return bool(name) and len(name) <= 63 and bool(_NAME_PART.fullmatch(name))


def _labels(labels, errors: Errors, where: str = "metadata.labels") -> None:
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        if not _qualified_name(str(key)):
            errors.invalid(where, key, NAME_PART_MSG)
        if not isinstance(value, str):
            errors.invalid(where, value, LABEL_VALUE_MSG)
        elif len(value) > 63:
            errors.invalid(where, value, "must be no more than 63 characters")
        elif not _LABEL_VALUE.fullmatch(value):
            errors.invalid(where, value, LABEL_VALUE_MSG)


def _name(plural: str, name: str | None, errors: Errors) -> None:
    if name is None:
        return
    name = str(name)
    if plural in PATH_NAMES:
        if name in (".", "..") or "/" in name or "%" in name:
            errors.invalid("metadata.name", name, 'may not contain "/" or "%" and may not be "." or ".."')
    elif plural in LABEL_NAMES or plural == "services":
        pattern, msg = (_LABEL, LABEL_MSG) if plural in LABEL_NAMES else (_DNS1035, DNS1035_MSG)
        if len(name) > 63:
            errors.invalid("metadata.name", name, "must be no more than 63 characters")
        elif not pattern.fullmatch(name):
            errors.invalid("metadata.name", name, msg)
    elif len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        errors.invalid("metadata.name", name, SUBDOMAIN_MSG)


# --- pods --------------------------------------------------------------------------------------------------
def _quantity(value, path: str, errors: Errors) -> float | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        errors.invalid(path, value, "quantities must match the regular expression "
                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")  # fmt: skip
        return None


def _container(c: dict, path: str, volumes: set[str], errors: Errors, names: set[str]) -> None:
    if not isinstance(c, dict):
        return
    name = c.get("name")
    if not name:
        errors.required(f"{path}.name")
    elif not _LABEL.fullmatch(str(name)) or len(str(name)) > 63:
        errors.invalid(f"{path}.name", name, LABEL_MSG)
    elif name in names:
        errors.duplicate(f"{path}.name", name)
    else:
        names.add(name)
    if not c.get("image"):
        errors.required(f"{path}.image")
    policy = c.get("imagePullPolicy")
    if policy and policy not in ("Always", "IfNotPresent", "Never"):
        errors.unsupported(f"{path}.imagePullPolicy", policy, ("Always", "IfNotPresent", "Never"))
    res = c.get("resources") or {}
    limits = {
        k: _quantity(v, f"{path}.resources.limits[{k}]", errors) for k, v in (res.get("limits") or {}).items()
    }
    for k, v in (res.get("requests") or {}).items():
        q = _quantity(v, f"{path}.resources.requests[{k}]", errors)
        if q is not None and q < 0:
            errors.invalid(f"{path}.resources.requests[{k}]", v, "must be greater than or equal to 0")
        lim = limits.get(k)
        if q is not None and lim is not None and q > lim:
            errors.invalid(f"{path}.resources.requests", v, f"must be less than or equal to {k} limit of "
                           f"{(res.get('limits') or {})[k]}")  # fmt: skip
        if "/" in k and not k.startswith(("kubernetes.io/", "requests.")) and lim is not None and q != lim:
            errors.invalid(f"{path}.resources.requests[{k}]", v, f"must be equal to {k} limit of "
                           f"{(res.get('limits') or {})[k]}")  # fmt: skip
    for i, p in enumerate(c.get("ports") or ()):
        port = (p or {}).get("containerPort")
        if not isinstance(port, int) or not 1 <= port <= 65535:
            errors.invalid(f"{path}.ports[{i}].containerPort", port, "must be between 1 and 65535, inclusive")
        proto = (p or {}).get("protocol", "TCP")
        if proto not in ("TCP", "UDP", "SCTP"):
            errors.unsupported(f"{path}.ports[{i}].protocol", proto, ("SCTP", "TCP", "UDP"))
    for i, e in enumerate(c.get("env") or ()):
        n = (e or {}).get("name")
        if not n:
            errors.required(f"{path}.env[{i}].name")
        elif not _ENV_NAME.fullmatch(str(n)):
            errors.invalid(f"{path}.env[{i}].name", n, ENV_NAME_MSG)
    mounts: set[str] = set()
    for i, m in enumerate(c.get("volumeMounts") or ()):
        n = (m or {}).get("name")
        if not n:
            errors.required(f"{path}.volumeMounts[{i}].name")
        elif n not in volumes:
            errors.not_found(f"{path}.volumeMounts[{i}].name", n)
        mp = (m or {}).get("mountPath")
        if not mp:
            errors.required(f"{path}.volumeMounts[{i}].mountPath")
        elif mp in mounts:
            errors.invalid(f"{path}.volumeMounts[{i}].mountPath", mp, "must be unique")
        else:
            mounts.add(mp)
    sc = c.get("securityContext") or {}
    for k in ("runAsUser", "runAsGroup"):
        if isinstance(sc.get(k), int) and sc[k] < 0:
            errors.invalid(
                f"{path}.securityContext.{k}", sc[k], "must be between 0 and 2147483647, inclusive"
            )


def pod_spec(spec: dict, path: str, errors: Errors, template_of: str = "") -> None:
    if not isinstance(spec, dict):
        errors.required(path)
        return
    volumes: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or ()):
        n = (v or {}).get("name")
        if not n:
            errors.required(f"{path}.volumes[{i}].name")
        elif n in volumes:
            errors.duplicate(f"{path}.volumes[{i}].name", n)
        else:
            volumes.add(n)
        sources = [k for k in VOLUME_SOURCES if (v or {}).get(k) is not None]
        if not sources:
            errors.required(f"{path}.volumes[{i}]", "must specify a volume type")
        elif len(sources) > 1:
            errors.forbidden(f"{path}.volumes[{i}].{sources[1]}", "may not specify more than 1 volume type")
        claim = (v or {}).get("persistentVolumeClaim")
        if isinstance(claim, dict) and not claim.get("claimName"):
            errors.required(f"{path}.volumes[{i}].persistentVolumeClaim.claimName")
    containers = spec.get("containers")
    if not containers:
        errors.required(f"{path}.containers")
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or ()):
            _container(c, f"{path}.{key}[{i}]", volumes, errors, names)
    rp = spec.get("restartPolicy")
    if rp and rp not in RESTART_POLICIES:
        errors.unsupported(f"{path}.restartPolicy", rp, RESTART_POLICIES)
    if template_of == "jobs" and rp not in ("OnFailure", "Never"):
        errors.unsupported(f"{path}.restartPolicy", rp, ("OnFailure", "Never"))
    if template_of in ("deployments", "replicasets", "statefulsets", "daemonsets") and rp not in (
        None,
        "Always",
    ):
        errors.unsupported(f"{path}.restartPolicy", rp, ("Always",))
    dp = spec.get("dnsPolicy")
    if dp and dp not in ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"):
        errors.unsupported(
            f"{path}.dnsPolicy", dp, ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
        )
    sa = spec.get("serviceAccountName")
    if sa and (len(sa) > 253 or not _SUBDOMAIN.fullmatch(sa)):
        errors.invalid(f"{path}.serviceAccountName", sa, SUBDOMAIN_MSG)
    _labels(spec.get("nodeSelector"), errors, f"{path}.nodeSelector")
    for i, t in enumerate(spec.get("tolerations") or ()):
        op = (t or {}).get("operator") or "Equal"
        if op not in ("Exists", "Equal"):
            errors.unsupported(f"{path}.tolerations[{i}].operator", op, ("Equal", "Exists"))
        if op == "Exists" and (t or {}).get("value"):
            errors.invalid(f"{path}.tolerations[{i}].operator", t["value"],
                           "value must be empty when `operator` is 'Exists'")  # fmt: skip
        if not (t or {}).get("key") and op != "Exists":
            errors.invalid(f"{path}.tolerations[{i}].operator", op,
                           "operator must be Exists when `key` is empty, which means \"match all values and all keys\"")  # fmt: skip
        eff = (t or {}).get("effect")
        if eff and eff not in TAINT_EFFECTS:
            errors.unsupported(f"{path}.tolerations[{i}].effect", eff, TAINT_EFFECTS)
    psc = spec.get("securityContext") or {}
    for k in ("runAsUser", "runAsGroup", "fsGroup"):
        if isinstance(psc.get(k), int) and psc[k] < 0:
            errors.invalid(
                f"{path}.securityContext.{k}", psc[k], "must be between 0 and 2147483647, inclusive"
            )
    tgp = spec.get("terminationGracePeriodSeconds")
    if isinstance(tgp, int) and tgp < 0:
        errors.invalid(f"{path}.terminationGracePeriodSeconds", tgp, "must be greater than or equal to 0")


# Pod updates may change only these (ValidatePodUpdate): the message lists them as the API server does
POD_UPDATE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def pod_update(new: dict, old: dict, errors: Errors) -> None:
    def strip(spec: dict) -> dict:
        s = json.loads(json.dumps(spec))
        for key in ("containers", "initContainers"):
            for c in s.get(key) or ():
                c.pop("image", None)
        for k in ("activeDeadlineSeconds", "tolerations", "schedulingGates", "nodeName"):
            s.pop(k, None)
        return s

    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if strip(ns) != strip(os_):
        errors.forbidden("spec", POD_UPDATE_MSG)
    old_tol = os_.get("tolerations") or []
    new_tol = ns.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        errors.forbidden(
            "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
        )


# --- workloads ---------------------------------------------------------------------------------------------
def _selector_matches(selector: dict, labels: dict) -> bool:
    from autoscaler.model.pods import selector_matches

    return selector_matches(selector, labels)


def workload(plural: str, obj: dict, errors: Errors) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        errors.required("spec")
        return
    template = spec.get("template")
    labels = ((template or {}).get("metadata") or {}).get("labels") or {}
    selector = spec.get("selector")
    if plural == "replicationcontrollers":
        if selector and not all(labels.get(k) == v for k, v in selector.items()):
            errors.invalid(
                "spec.template.metadata.labels", labels, "`selector` does not match template `labels`"
            )
    elif plural != "jobs" or spec.get("manualSelector"):
        if not selector:
            errors.required("spec.selector")
        elif not (selector.get("matchLabels") or selector.get("matchExpressions")):
            errors.invalid("spec.selector", selector, "empty selector is invalid for deployment"
                           if plural == "deployments" else "empty selector is invalid")  # fmt: skip
        elif not _selector_matches(selector, labels):
            errors.invalid(
                "spec.template.metadata.labels", labels, "`selector` does not match template `labels`"
            )
    _labels(labels, errors, "spec.template.labels")
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
    if template is None:
        errors.required("spec.template")
    else:
        pod_spec((template or {}).get("spec"), "spec.template.spec", errors, plural)
    if plural == "jobs":
        _job(spec, errors)


def _job(spec: dict, errors: Errors) -> None:
    for k in (
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
    ):
        v = spec.get(k)
        if isinstance(v, int) and v < 0:
            errors.invalid(f"spec.{k}", v, "must be greater than or equal to 0")
    mode = spec.get("completionMode", "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        errors.unsupported("spec.completionMode", mode, ("NonIndexed", "Indexed"))
    if mode == "Indexed" and spec.get("completions") is None:
        errors.required("spec.completions", "when completion mode is Indexed")
    if spec.get("backoffLimitPerIndex") is not None and mode != "Indexed":
        errors.forbidden("spec.backoffLimitPerIndex", "requires indexed completion mode")
    pfp = spec.get("podFailurePolicy")
    if pfp is not None:
        rp = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
        if rp != "Never":
            errors.invalid("spec.template.spec.restartPolicy", rp,
                           'only "Never" is supported when podFailurePolicy is specified')  # fmt: skip
        actions = ("Count", "FailIndex", "FailJob", "Ignore")
        for i, rule in enumerate(pfp.get("rules") or ()):
            action = (rule or {}).get("action")
            if action not in actions:
                errors.unsupported(f"spec.podFailurePolicy.rules[{i}].action", action, actions)
            if action == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
                errors.forbidden(f"spec.podFailurePolicy.rules[{i}].action",
                                 "requires the backoffLimitPerIndex to be set")  # fmt: skip
            codes, conds = rule.get("onExitCodes"), rule.get("onPodConditions")
            if (codes is None) == (conds is None):
                errors.invalid(f"spec.podFailurePolicy.rules[{i}]", "",
                               "specifying one of OnExitCodes and OnPodConditions is required")  # fmt: skip
            if codes is not None and codes.get("operator") not in ("In", "NotIn"):
                errors.unsupported(f"spec.podFailurePolicy.rules[{i}].onExitCodes.operator",
                                   codes.get("operator"), ("In", "NotIn"))  # fmt: skip


def workload_update(plural: str, new: dict, old: dict, errors: Errors) -> None:
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if plural in WORKLOADS and ns.get("selector") != os_.get("selector"):
        errors.invalid("spec.selector", ns.get("selector") or {}, IMMUTABLE)
    if plural == "jobs":
        tpl_new, tpl_old = ns.get("template"), os_.get("template")
        if tpl_new != tpl_old and not os_.get("suspend"):
            errors.invalid("spec.template", tpl_new, IMMUTABLE)
        for k in ("completions", "completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
            if k == "completions" and ns.get(k) != os_.get(k) and ns.get(k) == ns.get("parallelism"):
                continue  # elastic Indexed Jobs: completions may follow parallelism
            if ns.get(k) != os_.get(k):
                errors.invalid(f"spec.{k}", ns.get(k), IMMUTABLE)


# --- the rest ----------------------------------------------------------------------------------------------
def _service(obj: dict, errors: Errors) -> None:
    spec = obj.get("spec") or {}
    types = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
    if spec.get("type", "ClusterIP") not in types:
        errors.unsupported("spec.type", spec.get("type"), types)
    if spec.get("type") != "ExternalName" and not spec.get("ports") and spec.get("clusterIP") != "None":
        errors.required("spec.ports")
    names: set[str] = set()
    for i, p in enumerate(spec.get("ports") or ()):
        port = (p or {}).get("port")
        if not isinstance(port, int) or not 1 <= port <= 65535:
            errors.invalid(f"spec.ports[{i}].port", port, "must be between 1 and 65535, inclusive")
        if len(spec.get("ports") or ()) > 1 and not (p or {}).get("name"):
            errors.required(f"spec.ports[{i}].name")
        n = (p or {}).get("name")
        if n:
            if n in names:
                errors.duplicate(f"spec.ports[{i}].name", n)
            names.add(n)


def _rbac(plural: str, obj: dict, errors: Errors) -> None:
    if plural in ("rolebindings", "clusterrolebindings"):
        ref = obj.get("roleRef") or {}
        if not ref.get("name"):
            errors.required("roleRef.name")
        kinds = ("ClusterRole", "Role") if plural == "rolebindings" else ("ClusterRole",)
        if ref.get("kind") not in kinds:
            errors.unsupported("roleRef.kind", ref.get("kind", ""), kinds)
        if ref.get("apiGroup", "rbac.authorization.k8s.io") != "rbac.authorization.k8s.io":
            errors.unsupported("roleRef.apiGroup", ref.get("apiGroup"), ("rbac.authorization.k8s.io",))
        for i, s in enumerate(obj.get("subjects") or ()):
            kind = (s or {}).get("kind")
            if kind not in ("ServiceAccount", "User", "Group"):
                errors.unsupported(f"subjects[{i}].kind", kind, ("ServiceAccount", "User", "Group"))
            if not (s or {}).get("name"):
                errors.required(f"subjects[{i}].name")
            if kind == "ServiceAccount" and plural == "clusterrolebindings" and not s.get("namespace"):
                errors.required(f"subjects[{i}].namespace")
    else:
        for i, r in enumerate(obj.get("rules") or ()):
            if not (r or {}).get("verbs"):
                errors.required(f"rules[{i}].verbs", "verbs must contain at least one value")
            if r.get("nonResourceURLs") and plural == "roles":
                errors.invalid(f"rules[{i}].nonResourceURLs", r["nonResourceURLs"],
                               "namespaced rules cannot apply to non-resource URLs")  # fmt: skip
            if not r.get("nonResourceURLs") and not r.get("resources"):
                errors.required(f"rules[{i}].resources", "resource rules must supply at least one resource")
            if not r.get("nonResourceURLs") and r.get("apiGroups") is None:
                errors.required(f"rules[{i}].apiGroups", "resource rules must supply at least one api group")


def _data_keys(obj: dict, errors: Errors) -> None:
    for field in ("data", "binaryData", "stringData"):
        for key in obj.get(field) or {}:
            if len(key) > 253 or not _CONFIG_KEY.fullmatch(key):
                errors.invalid(f"{field}[{key}]", key, CONFIG_KEY_MSG)


def _pvc(obj: dict, errors: Errors) -> None:
    spec = obj.get("spec") or {}
    if not spec.get("accessModes"):
        errors.required("spec.accessModes", "at least 1 access mode is required")
    modes = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
    for m in spec.get("accessModes") or ():
        if m not in modes:
            errors.unsupported("spec.accessModes", m, modes)
    if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
        errors.required("spec.resources[storage]")


def _node(obj: dict, errors: Errors) -> None:
    for i, taint in enumerate((obj.get("spec") or {}).get("taints") or []):
        if not isinstance(taint, dict):
            continue
        if not taint.get("key"):
            errors.required(f"spec.taints[{i}].key")
        if not taint.get("effect"):
            errors.required(f"spec.taints[{i}].effect")
        elif taint["effect"] not in TAINT_EFFECTS:
            errors.unsupported(f"spec.taints[{i}].effect", taint["effect"], TAINT_EFFECTS)


def _priority_class(obj: dict, errors: Errors) -> None:
    value = obj.get("value")
    name = obj["metadata"].get("name", "")
    if not isinstance(value, int):
        errors.required("value")
    elif value > 1_000_000_000 and not name.startswith("system-"):
        errors.forbidden("value", "maximum allowed value of a user defined priority is 1000000000")


KNOWN_USAGES = {
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
    "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc",
}  # fmt: skip


def _csr(obj: dict, errors: Errors) -> None:
    """pkg/apis/certificates/validation ValidateCertificateSigningRequestCreate."""
    import base64

    from cryptography import x509

    spec = obj.get("spec") or {}
    try:
        req = x509.load_pem_x509_csr(base64.b64decode(spec.get("request", "")))
        if not req.is_signature_valid:
            errors.invalid("spec.request", "<request>", "the request's signature is not valid")
    except ValueError:
        errors.invalid("spec.request", "<request>", "PEM block type must be CERTIFICATE REQUEST")
    signer = spec.get("signerName") or ""
    if not signer:
        errors.required("spec.signerName")
    elif "/" not in signer:
        errors.invalid("spec.signerName", signer, "must be a fully qualified domain and path of the form "
                       "'example.com/signer-name'")  # fmt: skip
    usages = spec.get("usages") or []
    if not usages:
        errors.required("spec.usages")
    for u in usages:
        if u not in KNOWN_USAGES:
            errors.unsupported("spec.usages", u, sorted(KNOWN_USAGES))
    seconds = spec.get("expirationSeconds")
    if seconds is not None and seconds < 600:
        errors.invalid(
            "spec.expirationSeconds", seconds, "may not specify a duration less than 600 seconds (10 minutes)"
        )


def validate(plural: str, kind: str, obj: dict, old: dict | None = None) -> None:
    """Raise Invalid (422) with the API server's message when ``obj`` (an update of ``old``) breaks a rule."""
    errors = Errors()
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        errors.required("metadata.name", "name or generateName is required")
    _name(plural, name, errors)
    _labels(meta.get("labels"), errors)
    for key in meta.get("annotations") or {}:
        if not _qualified_name(str(key)):
            errors.invalid("metadata.annotations", key, NAME_PART_MSG)
    if plural == "nodes":
        _node(obj, errors)
    elif plural == "pods":
        pod_spec(obj.get("spec"), "spec", errors)
        if old is not None:
            pod_update(obj, old, errors)
    elif plural in WORKLOADS:
        workload(plural, obj, errors)
        if old is not None:
            workload_update(plural, obj, old, errors)
    elif plural == "services":
        _service(obj, errors)
        if old is not None:
            ip_new, ip_old = (
                (obj.get("spec") or {}).get("clusterIP"),
                (old.get("spec") or {}).get("clusterIP"),
            )
            if ip_old and ip_new and ip_new != ip_old:
                errors.invalid("spec.clusterIPs[0]", [ip_new], "may not change once set")
    elif plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
        _rbac(plural, obj, errors)
        if old is not None and plural.endswith("bindings") and obj.get("roleRef") != old.get("roleRef"):
            errors.invalid("roleRef", obj.get("roleRef"), "cannot change roleRef")
    elif plural in ("configmaps", "secrets"):
        _data_keys(obj, errors)
        if (
            old is not None
            and old.get("immutable")
            and (obj.get("data") != old.get("data") or obj.get("binaryData") != old.get("binaryData"))
        ):
            errors.forbidden("data", "field is immutable when `immutable` is set")
    elif plural == "persistentvolumeclaims":
        _pvc(obj, errors)
    elif plural == "priorityclasses":
        _priority_class(obj, errors)
    elif plural == "certificatesigningrequests" and old is None:
        _csr(obj, errors)
    errors.raise_for(kind, name or meta.get("generateName") or "")
