"""Label and field selectors as list and watch requests carry them (``a=b,c!=d,e in (x,y),!f``)."""

from __future__ import annotations

import re

from autoscaler.core.selectors import parse_selector_text, selector_matches
from autoscaler.model.store import Invalid

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


FIELDS = {
    "metadata.name": lambda o: o["metadata"].get("name", ""),
    "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName") or "",
    "status.phase": lambda o: (o.get("status") or {}).get("phase") or "",
    "spec.unschedulable": lambda o: str(bool((o.get("spec") or {}).get("unschedulable"))).lower(),
    "reason": lambda o: o.get("reason", ""),
    "type": lambda o: o.get("type", ""),
    "source": lambda o: (o.get("source") or {}).get("component", ""),
    "reportingComponent": lambda o: o.get("reportingComponent", ""),
}
for _field in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
    # core/v1 Events by involvedObject, events.k8s.io/v1 by regarding (the same stored field)
    FIELDS[f"involvedObject.{_field}"] = FIELDS[f"regarding.{_field}"] = lambda o, f=_field: (
        o.get("involvedObject") or {}
    ).get(f, "")


def parse_field_selector(text: str | None):
    """A predicate over an object; only the fields the API server supports for our kinds."""
    reqs = []
    for part in _split(text or ""):
        m = _EQ.match(part)
        if not m:
            raise BadRequest(f"invalid field selector: {part!r}")
        field, op, value = m.groups()
        if field not in FIELDS:
            raise BadRequest(f"field label not supported: {field}")
        get = FIELDS[field]
        if op == "!=":
            reqs.append(lambda o, g=get, v=value: g(o) != v)
        else:
            reqs.append(lambda o, g=get, v=value: g(o) == v)
    return lambda obj: all(r(obj) for r in reqs)


class BadRequest(Invalid):
    reason, code = "BadRequest", 400
