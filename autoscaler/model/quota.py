"""What a ResourceQuota counts (k8s.io/kubernetes pkg/quota/v1/evaluator/core): shared by the quota controller
(``status.used``) and ResourceQuota admission where an API server serves the model.

- pods (not terminal, not being deleted past their grace): ``pods``/``count/pods``, ``requests.<r>`` and
  ``limits.<r>`` for cpu, memory, ephemeral-storage and extended resources (``requests.nvidia.com/gpu``), ``cpu`` and
  ``memory`` as requests; a pod's request is the sum of its containers' or its largest init container's, plus
  its overhead (``PodRequests``);
- persistent volume claims: ``persistentvolumeclaims``, ``requests.storage``,
  ``<class>.storageclass.storage.k8s.io/requests.storage`` and ``.../persistentvolumeclaims``;
- services (``services``, ``services.loadbalancers``, ``services.nodeports``), and every kind by
  ``count/<resource>[.<group>]`` plus the legacy names ``secrets``, ``configmaps``, ``replicationcontrollers``,
  ``resourcequotas``;
- scopes (``Terminating``, ``NotTerminating``, ``BestEffort``, ``NotBestEffort``, ``PriorityClass`` through
  ``scopeSelector``) select which pods a quota counts.
"""

from __future__ import annotations

from autoscaler.model.quantity import parse_quantity

COMPUTE = ("cpu", "memory", "ephemeral-storage")
LEGACY_COUNTS = {
    "pods": "pods",
    "services": "services",
    "secrets": "secrets",
    "configmaps": "configmaps",
    "persistentvolumeclaims": "persistentvolumeclaims",
    "replicationcontrollers": "replicationcontrollers",
    "resourcequotas": "resourcequotas",
}
CORE = {"pods", "services", "secrets", "configmaps", "persistentvolumeclaims", "replicationcontrollers",
        "resourcequotas", "serviceaccounts", "endpoints", "events", "limitranges", "podtemplates"}  # fmt: skip


def _containers_resources(spec: dict, key: str) -> dict[str, float]:
    total: dict[str, float] = {}
    for c in spec.get("containers") or ():
        for r, q in (((c.get("resources") or {}).get(key)) or {}).items():
            total[r] = total.get(r, 0.0) + parse_quantity(q)
    for c in spec.get("initContainers") or ():
        for r, q in (((c.get("resources") or {}).get(key)) or {}).items():
            total[r] = max(total.get(r, 0.0), parse_quantity(q))
    for r, q in (spec.get("overhead") or {}).items():
        total[r] = total.get(r, 0.0) + parse_quantity(q)
    return total


def pod_counts(pod: dict) -> bool:
    """Whether a pod uses quota: not Succeeded or Failed (QuotaV1Pod)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def best_effort(spec: dict) -> bool:
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        res = c.get("resources") or {}
        if any(k in COMPUTE[:2] for k in (res.get("requests") or {})) or any(
            k in COMPUTE[:2] for k in (res.get("limits") or {})
        ):
            return False
    return True


def pod_usage(pod: dict) -> dict[str, float]:
    spec = pod.get("spec") or {}
    out: dict[str, float] = {"pods": 1.0, "count/pods": 1.0}
    for r, q in _containers_resources(spec, "requests").items():
        out[f"requests.{r}"] = out.get(f"requests.{r}", 0.0) + q
        if r in ("cpu", "memory", "ephemeral-storage"):
            out[r] = out.get(r, 0.0) + q
    for r, q in _containers_resources(spec, "limits").items():
        out[f"limits.{r}"] = out.get(f"limits.{r}", 0.0) + q
    return out


def pvc_usage(pvc: dict) -> dict[str, float]:
    spec = pvc.get("spec") or {}
    storage = parse_quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
    out = {"persistentvolumeclaims": 1.0, "count/persistentvolumeclaims": 1.0, "requests.storage": storage}
    sc = spec.get("storageClassName")
    if sc:
        out[f"{sc}.storageclass.storage.k8s.io/requests.storage"] = storage
        out[f"{sc}.storageclass.storage.k8s.io/persistentvolumeclaims"] = 1.0
    return out


def object_usage(plural: str, group: str, obj: dict) -> dict[str, float]:
    """What one object counts for, by resource name."""
    if plural == "pods":
        return pod_usage(obj) if pod_counts(obj) else {}
    if plural == "persistentvolumeclaims":
        return pvc_usage(obj)
    key = f"count/{plural}" if not group else f"count/{plural}.{group}"
    out = {key: 1.0}
    if plural in LEGACY_COUNTS and not group:
        out[LEGACY_COUNTS[plural]] = 1.0
    if plural == "services":
        t = (obj.get("spec") or {}).get("type")
        if t == "LoadBalancer":
            out["services.loadbalancers"] = 1.0
        if t in ("LoadBalancer", "NodePort"):
            out["services.nodeports"] = float(len((obj.get("spec") or {}).get("ports") or ()))
    return out


def _scope_matches(scope: str, op: str, values, pod: dict) -> bool:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        result = spec.get("activeDeadlineSeconds") is not None
    elif scope == "NotTerminating":
        result = spec.get("activeDeadlineSeconds") is None
    elif scope == "BestEffort":
        result = best_effort(spec)
    elif scope == "NotBestEffort":
        result = not best_effort(spec)
    elif scope == "PriorityClass":
        pc = spec.get("priorityClassName") or ""
        if op == "Exists":
            return bool(pc)
        if op == "DoesNotExist":
            return not pc
        result = pc in (values or ())
        return result if op == "In" else not result
    else:
        return True
    return result if op in ("Exists", "In", "") else not result


def quota_selects(quota: dict, plural: str, obj: dict) -> bool:
    """Whether the quota's scopes select the object (scopes apply to pods only; other kinds: unscoped quotas)."""
    spec = quota.get("spec") or {}
    scopes = [(s, "Exists", ()) for s in spec.get("scopes") or ()]
    for e in ((spec.get("scopeSelector") or {}).get("matchExpressions")) or ():
        scopes.append((e.get("scopeName"), e.get("operator", "Exists"), e.get("values")))
    if not scopes:
        return True
    if plural != "pods":
        return False
    return all(_scope_matches(s, op, v, obj) for s, op, v in scopes)


def tracked(quota: dict) -> set[str]:
    return set(((quota.get("spec") or {}).get("hard")) or {})


def used(quota: dict, objects_by_kind: dict[tuple[str, str], list[dict]]) -> dict[str, float]:
    """``status.used`` of a quota over the namespace's objects ({(plural, group): objects})."""
    hard = tracked(quota)
    total = {r: 0.0 for r in hard}
    for (plural, group), objs in objects_by_kind.items():
        for obj in objs:
            if not quota_selects(quota, plural, obj):
                continue
            for r, q in object_usage(plural, group, obj).items():
                if r in total:
                    total[r] += q
    return total


def counted_kinds(quota: dict) -> set[tuple[str, str]]:
    """The (plural, group) kinds a quota's hard limits count."""
    out: set[tuple[str, str]] = set()
    for r in tracked(quota):
        if r.startswith("count/"):
            name = r[len("count/") :]
            plural, _, group = name.partition(".")
            out.add((plural, group))
        elif r in ("pods", "cpu", "memory", "ephemeral-storage") or r.startswith(("requests.", "limits.")):
            out.add(("pods", ""))
            if r == "requests.storage":
                out.add(("persistentvolumeclaims", ""))
        elif r in LEGACY_COUNTS:
            out.add((LEGACY_COUNTS[r], ""))
        elif r.startswith("services"):
            out.add(("services", ""))
        elif "storageclass.storage.k8s.io" in r:
            out.add(("persistentvolumeclaims", ""))
    return out


def format_quantity(resource: str, value: float) -> str:
    """A used amount as the API prints it (integers plain, fractions of a CPU in millicores, memory in bytes)."""
    if value == int(value):
        return str(int(value))
    if resource.endswith("cpu") or resource == "cpu":
        return f"{round(value * 1000)}m"
    return str(round(value))
