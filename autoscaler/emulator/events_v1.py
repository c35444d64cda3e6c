"""events.k8s.io/v1 Events over the same store as core/v1 Events (the API server converts the same way)."""

from __future__ import annotations

import copy


def _micro(t: str | None) -> str | None:
    """An RFC 3339 time as a MicroTime (events.k8s.io's eventTime is required and has microseconds)."""
    return t.replace("Z", ".000000Z") if t and t.endswith("Z") and "." not in t else t


def to_events_v1(core: dict) -> dict:
    e = copy.deepcopy(core)
    out = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": e["metadata"],
        "eventTime": e.get("eventTime")
        or _micro(e.get("firstTimestamp") or e["metadata"].get("creationTimestamp")),
        "reason": e.get("reason"),
        "note": e.get("message"),
        "type": e.get("type"),
        "regarding": e.get("involvedObject"),
        "reportingController": e.get("reportingComponent") or (e.get("source") or {}).get("component", ""),
        "reportingInstance": e.get("reportingInstance", ""),
        "action": e.get("action"),
        "deprecatedCount": e.get("count"),
        "deprecatedFirstTimestamp": e.get("firstTimestamp"),
        "deprecatedLastTimestamp": e.get("lastTimestamp"),
        "deprecatedSource": e.get("source"),
    }
    if e.get("related"):
        out["related"] = e["related"]
    return {k: v for k, v in out.items() if v is not None}


def from_events_v1(ev: dict) -> dict:
    ev = copy.deepcopy(ev)
    out = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": ev.get("metadata") or {},
        "involvedObject": ev.get("regarding") or {},
        "reason": ev.get("reason"),
        "message": ev.get("note"),
        "type": ev.get("type", "Normal"),
        "eventTime": ev.get("eventTime"),
        "action": ev.get("action"),
        "reportingComponent": ev.get("reportingController"),
        "reportingInstance": ev.get("reportingInstance"),
        "source": ev.get("deprecatedSource") or {"component": ev.get("reportingController", "")},
        "count": ev.get("deprecatedCount", 1),
        "firstTimestamp": ev.get("deprecatedFirstTimestamp"),
        "lastTimestamp": ev.get("deprecatedLastTimestamp"),
    }
    if ev.get("related"):
        out["related"] = ev["related"]
    return {k: v for k, v in out.items() if v is not None}
