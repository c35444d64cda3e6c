"""Defaulting, as the API server's generated defaulters run it on every object it decodes (pkg/apis/*/v1/defaults.go,
``SetDefaults_<Kind>``), before admission; the pod template of a workload gets the PodSpec's defaults too.

Only what a client can see change is set: a pod's restartPolicy, dnsPolicy, schedulerName, terminationGracePeriod,
securityContext, enableServiceLinks; a container's imagePullPolicy (``Always`` for ``:latest`` or no tag, else
``IfNotPresent``), terminationMessagePath/Policy, requests from limits when only limits are given, probe timings,
port protocols and, for ``hostNetwork`` pods, ``hostPort`` = ``containerPort`` (``defaultHostNetworkPorts``); the
workloads' replicas, strategies and history limits; a Job's parallelism, completions, completionMode,
backoffLimit and podReplacementPolicy; a Service's type, affinity, IP families and target ports; volumes' default
modes; a Namespace's ``kubernetes`` finalizer and ``kubernetes.io/metadata.name`` label.
"""

from __future__ import annotations

import copy

from autoscaler.model.quantity import parse_quantity

MAX_INT32 = 2**31 - 1


def _set(d: dict, key: str, value) -> None:
    if d.get(key) is None:
        d[key] = copy.deepcopy(value)


def image_pull_policy(image: str) -> str:
    """``Always`` when the image has no tag or the tag ``latest`` (and no digest), else ``IfNotPresent``."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _probe(p: dict | None) -> None:
    if not isinstance(p, dict):
        return
    for k, v in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        _set(p, k, v)
    if isinstance(p.get("httpGet"), dict):
        _set(p["httpGet"], "scheme", "HTTP")
        _set(p["httpGet"], "path", "/")


def _container(c: dict, host_network: bool) -> None:
    if not isinstance(c, dict):
        return
    if c.get("image"):
        _set(c, "imagePullPolicy", image_pull_policy(c["image"]))
    _set(c, "terminationMessagePath", "/dev/termination-log")
    _set(c, "terminationMessagePolicy", "File")
    res = c.get("resources")
    if isinstance(res, dict) and isinstance(res.get("limits"), dict):
        requests = res.setdefault("requests", {})
        for k, v in res["limits"].items():
            requests.setdefault(k, v)
    for p in c.get("ports") or ():
        if isinstance(p, dict):
            _set(p, "protocol", "TCP")
            if host_network and not p.get("hostPort") and p.get("containerPort"):
                p["hostPort"] = p["containerPort"]
    for e in c.get("env") or ():
        ref = ((e or {}).get("valueFrom") or {}).get("fieldRef")
        if isinstance(ref, dict):
            _set(ref, "apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(c.get(probe))


def _volume(v: dict) -> None:
    if not isinstance(v, dict):
        return
    for kind in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(v.get(kind), dict):
            _set(v[kind], "defaultMode", 420)
    if isinstance(v.get("hostPath"), dict):
        _set(v["hostPath"], "type", "")
    for src in (
        ((v.get("projected") or {}).get("sources") or ()) if isinstance(v.get("projected"), dict) else ()
    ):
        for f in ((src or {}).get("downwardAPI") or {}).get("items") or ():
            if isinstance((f or {}).get("fieldRef"), dict):
                _set(f["fieldRef"], "apiVersion", "v1")


def pod_spec(spec: dict) -> None:
    if not isinstance(spec, dict):
        return
    _set(spec, "restartPolicy", "Always")
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "schedulerName", "default-scheduler")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "securityContext", {})
    _set(spec, "enableServiceLinks", True)
    host = bool(spec.get("hostNetwork"))
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            _container(c, host)
    for v in spec.get("volumes") or ():
        _volume(v)


def qos_class(spec: dict) -> str:
    """The pod's QoS class (pkg/apis/core/helper/qos ``GetPodQOS``)."""
    requests: dict[str, float] = {}
    limits: dict[str, float] = {}
    guaranteed = True
    any_set = False
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        res = (c or {}).get("resources") or {}
        req = {k: parse_quantity(v) for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: parse_quantity(v) for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        if req or lim:
            any_set = True
        if set(lim) != {"cpu", "memory"} or any(req.get(k, lim[k]) != lim[k] for k in lim):
            guaranteed = False
        for k, v in req.items():
            requests[k] = requests.get(k, 0) + v
        for k, v in lim.items():
            limits[k] = limits.get(k, 0) + v
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _template(obj: dict) -> None:
    tpl = (obj.get("spec") or {}).get("template")
    if isinstance(tpl, dict):
        pod_spec(tpl.setdefault("spec", {}))


def apply(plural: str, obj: dict) -> None:
    """Default ``obj`` (a ``plural`` object) in place."""
    meta = obj.setdefault("metadata", {})
    if plural == "pods":
        pod_spec(obj.setdefault("spec", {}))
    elif plural == "nodes":
        obj.setdefault("spec", {})
        obj.setdefault("status", {})
    elif plural == "namespaces":
        spec = obj.setdefault("spec", {})
        _set(spec, "finalizers", ["kubernetes"])
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta.get("name", "")
    elif plural in ("deployments", "replicasets", "statefulsets", "daemonsets", "replicationcontrollers"):
        spec = obj.setdefault("spec", {})
        _template(obj)
        if plural != "daemonsets":
            _set(spec, "replicas", 1)
        if plural == "deployments":
            strategy = spec.setdefault("strategy", {})
            _set(strategy, "type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                ru = strategy.setdefault("rollingUpdate", {})
                _set(ru, "maxUnavailable", "25%")
                _set(ru, "maxSurge", "25%")
            _set(spec, "revisionHistoryLimit", 10)
            _set(spec, "progressDeadlineSeconds", 600)
        elif plural == "statefulsets":
            _set(spec, "podManagementPolicy", "OrderedReady")
            us = spec.setdefault("updateStrategy", {})
            _set(us, "type", "RollingUpdate")
            if us["type"] == "RollingUpdate":
                _set(us.setdefault("rollingUpdate", {}), "partition", 0)
            _set(spec, "revisionHistoryLimit", 10)
            _set(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                {"whenDeleted": "Retain", "whenScaled": "Retain"},
            )
        elif plural == "daemonsets":
            us = spec.setdefault("updateStrategy", {})
            _set(us, "type", "RollingUpdate")
            if us["type"] == "RollingUpdate":
                ru = us.setdefault("rollingUpdate", {})
                _set(ru, "maxUnavailable", 1)
                _set(ru, "maxSurge", 0)
            _set(spec, "revisionHistoryLimit", 10)
        elif plural == "replicationcontrollers":
            tpl_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
            if tpl_labels and not spec.get("selector"):
                spec["selector"] = dict(tpl_labels)
    elif plural == "jobs":
        job_spec(obj.setdefault("spec", {}))
    elif plural == "cronjobs":
        spec = obj.setdefault("spec", {})
        _set(spec, "concurrencyPolicy", "Allow")
        _set(spec, "suspend", False)
        _set(spec, "successfulJobsHistoryLimit", 3)
        _set(spec, "failedJobsHistoryLimit", 1)
        jt = spec.get("jobTemplate")
        if isinstance(jt, dict):
            job_spec(jt.setdefault("spec", {}))
    elif plural == "services":
        spec = obj.setdefault("spec", {})
        _set(spec, "type", "ClusterIP")
        _set(spec, "sessionAffinity", "None")
        _set(spec, "internalTrafficPolicy", "Cluster")
        for p in spec.get("ports") or ():
            if isinstance(p, dict):
                _set(p, "protocol", "TCP")
                _set(p, "targetPort", p.get("port"))
    elif plural == "persistentvolumeclaims":
        spec = obj.setdefault("spec", {})
        _set(spec, "volumeMode", "Filesystem")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif plural == "persistentvolumes":
        spec = obj.setdefault("spec", {})
        _set(spec, "persistentVolumeReclaimPolicy", "Retain")
        _set(spec, "volumeMode", "Filesystem")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif plural == "secrets":
        _set(obj, "type", "Opaque")
    elif plural == "priorityclasses":
        _set(obj, "preemptionPolicy", "PreemptLowerPriority")
    elif plural == "storageclasses":
        _set(obj, "reclaimPolicy", "Delete")
        _set(obj, "volumeBindingMode", "Immediate")
    elif plural == "csidrivers":
        spec = obj.setdefault("spec", {})
        for k, v in (("attachRequired", True), ("podInfoOnMount", False), ("requiresRepublish", False),
                     ("storageCapacity", False), ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
                     ("volumeLifecycleModes", ["Persistent"]), ("seLinuxMount", False)):  # fmt: skip
            _set(spec, k, v)
    elif plural == "networkpolicies":
        spec = obj.setdefault("spec", {})
        if spec.get("policyTypes") is None:
            spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def job_spec(spec: dict) -> None:
    """SetDefaults_Job (pkg/apis/batch/v1/defaults.go)."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _set(spec, "parallelism", 1)
    _set(spec, "completionMode", "NonIndexed")
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    _set(spec, "suspend", False)
    _set(spec, "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    tpl = spec.get("template")
    if isinstance(tpl, dict):
        pod_spec(tpl.setdefault("spec", {}))
