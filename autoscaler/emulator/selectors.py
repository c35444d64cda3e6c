"""Label and field selectors as list and watch requests carry them (``a=b,c!=d,e in (x,y),!f``)."""

from __future__ import annotations

import re

from autoscaler.core.selectors import parse_selector_text, selector_matches
from autoscaler.emulator.errors import BadRequest

__all__ = ["BadRequest", "parse_field_selector", "parse_label_selector"]

_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_./-]*)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def parse_label_selector(text: str | None):
    """A predicate over a labels dict; BadRequest (HTTP 400) on a malformed selector. Parsed by the project's one
    selector parser (autoscaler.core.selectors, Kubernetes' ``labels.Parse`` grammar and label rules)."""
    try:
        reqs = parse_selector_text(text)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    return lambda labels: selector_matches(reqs, labels or {})


def _get(*path):
    def get(o):
        node = o
        for p in path:
            node = (node or {}).get(p) if isinstance(node, dict) else None
        if isinstance(node, bool):
            return str(node).lower()
        return "" if node is None else str(node)

    return get


COMMON = {"metadata.name": _get("metadata", "name"), "metadata.namespace": _get("metadata", "namespace")}
_EVENTS = {
    "reason": _get("reason"),
    "type": _get("type"),
    "source": _get("source", "component"),
    "reportingComponent": _get("reportingComponent"),
    "reportingController": _get("reportingComponent"),
}
for _field in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
    # core/v1 Events by involvedObject, events.k8s.io/v1 by regarding (the same stored field)
    _EVENTS[f"involvedObject.{_field}"] = _EVENTS[f"regarding.{_field}"] = _get("involvedObject", _field)
# the field labels each registry supports (pkg/registry/*/strategy.go ``*ToSelectableFields`` and the
# conversion funcs' AddFieldLabelConversionFunc): anything else is 400 "field label not supported"
FIELDS = {
    "pods": {
        "spec.nodeName": _get("spec", "nodeName"),
        "spec.restartPolicy": _get("spec", "restartPolicy"),
        "spec.schedulerName": _get("spec", "schedulerName"),
        "spec.serviceAccountName": _get("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: str(bool((o.get("spec") or {}).get("hostNetwork"))).lower(),
        "status.phase": _get("status", "phase"),
        "status.podIP": _get("status", "podIP"),
        "status.nominatedNodeName": _get("status", "nominatedNodeName"),
    },
    "nodes": {"spec.unschedulable": lambda o: str(bool((o.get("spec") or {}).get("unschedulable"))).lower()},
    "events": _EVENTS,
    "secrets": {"type": _get("type")},
    "namespaces": {"status.phase": _get("status", "phase")},
    "replicasets": {"status.replicas": _get("status", "replicas")},
    "replicationcontrollers": {"status.replicas": _get("status", "replicas")},
    "jobs": {"status.successful": _get("status", "succeeded")},
    "certificatesigningrequests": {"spec.signerName": _get("spec", "signerName")},
}


def parse_field_selector(text: str | None, plural: str = "pods"):
    """A predicate over an object; only the field labels the API server supports for the kind."""
    fields = {**COMMON, **FIELDS.get(plural, {})}
    reqs = []
    for part in _split(text or ""):
        m = _EQ.match(part)
        if not m:
            raise BadRequest(f"invalid field selector: {part!r}")
        field, op, value = m.groups()
        if field not in fields:
            raise BadRequest(f"field label not supported: {field}")
        get = fields[field]
        if op == "!=":
            reqs.append(lambda o, g=get, v=value: g(o) != v)
        else:
            reqs.append(lambda o, g=get, v=value: g(o) == v)
    return lambda obj: all(r(obj) for r in reqs)
