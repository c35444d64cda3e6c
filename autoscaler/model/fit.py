"""Interim copy of the planner's predicate until ``autoscaler.core.fit.pod_fits_node`` exists."""

from __future__ import annotations

from autoscaler.model.pods import requests
from autoscaler.model.quantity import parse_quantity


def _tolerated(taint: dict, tolerations: list[dict]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _term_matches(term: dict, labels: dict) -> bool:
    for e in term.get("matchExpressions") or ():
        key, op, values = e["key"], e["operator"], e.get("values") or []
        v = labels.get(key)
        ok = {
            "In": v in values,
            "NotIn": v not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
            "Gt": v is not None and values and float(v) > float(values[0]),
            "Lt": v is not None and values and float(v) < float(values[0]),
        }.get(op, False)
        if not ok:
            return False
    return True


def pod_fits_node(pod: dict, node: dict, pods_on_node: list[dict]) -> str | None:
    """None when ``pod`` fits ``node`` next to ``pods_on_node``, else the reason it does not."""
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(
            taint, spec.get("tolerations") or []
        ):
            return f"untolerated taint {taint['key']}"
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return f"node selector {k}={v}"
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if affinity and not any(_term_matches(t, labels) for t in affinity.get("nodeSelectorTerms") or ()):
        return "node affinity"
    alloc = (node.get("status") or {}).get("allocatable") or {}
    used: dict[str, float] = {}
    for p in pods_on_node:
        for r, q in requests(p).items():
            used[r] = used.get(r, 0.0) + q
    for r, q in requests(pod).items():
        if q > 0 and used.get(r, 0.0) + q > parse_quantity(alloc.get(r, 0)) + 1e-9:
            return f"insufficient {r}"
    return None
