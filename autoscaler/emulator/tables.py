"""Server-side Table output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``), so that plain
``kubectl get nodes`` / ``pods`` / ``events`` (and ``-o wide``) print the columns kube-apiserver's printers give
them (pkg/printers/internalversion/printers.go: nodeColumnDefinitions, podColumnDefinitions,
eventColumnDefinitions; priority-1 columns are the ``-o wide`` ones). Other kinds get NAME and AGE."""

from __future__ import annotations

from datetime import datetime

TABLE_ACCEPT = "as=Table"


def wants_table(accept: str) -> bool:
    return TABLE_ACCEPT in (accept or "") and "g=meta.k8s.io" in (accept or "")


def human_age(seconds: float) -> str:
    """As kubectl prints ages (k8s.io/apimachinery duration.HumanDuration, simplified)."""
    s = max(0, int(seconds))
    m, h, d = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    return f"{d}d"


def _age(obj: dict, now: float) -> str:
    created = obj["metadata"].get("creationTimestamp")
    if not created:
        return "<unknown>"
    return human_age(now - datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())


def _node_row(n: dict, now: float) -> list:
    ready = next((c for c in n.get("status", {}).get("conditions", []) if c["type"] == "Ready"), {})
    # as kube-apiserver's printNode: Ready, NotReady for False and Unknown alike, Unknown without the condition
    status = ("Ready" if ready.get("status") == "True" else "NotReady") if ready else "Unknown"
    if n.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(
        k.split("/", 1)[1]
        for k in n["metadata"].get("labels", {})
        if k.startswith("node-role.kubernetes.io/")
    )
    info = n.get("status", {}).get("nodeInfo", {})
    addresses = n.get("status", {}).get("addresses") or []

    def address(kind: str) -> str:
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    return [
        n["metadata"]["name"],
        status,
        ",".join(roles) or "<none>",
        _age(n, now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _when(value: str | None, now: float) -> str:
    if not value:
        return "<unknown>"
    return human_age(now - datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())


def _event_row(e: dict, now: float) -> list:
    obj = e.get("involvedObject") or {}
    source = e.get("source") or {}
    where = source.get("component") or e.get("reportingComponent") or ""
    if source.get("host"):
        where = f"{where}, {source['host']}"
    last = e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp")
    first = e.get("firstTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp")
    return [
        _when(last, now),
        e.get("type") or "",
        e.get("reason") or "",
        f"{(obj.get('kind') or '').lower()}/{obj.get('name') or ''}",
        obj.get("fieldPath") or "",
        where,
        (e.get("message") or "").strip(),
        _when(first, now),
        e.get("count") or 1,
        e["metadata"]["name"],
    ]


def _pod_row(p: dict, now: float) -> list:
    statuses = p.get("status", {}).get("containerStatuses") or []
    containers = p.get("spec", {}).get("containers") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    phase = p.get("status", {}).get("phase", "Pending")
    reason = p.get("status", {}).get("reason")
    for c in statuses:
        waiting = (c.get("state") or {}).get("waiting") or {}
        term = (c.get("state") or {}).get("terminated")
        if waiting.get("reason"):  # as printPod: ContainerCreating while the node's network is not up
            reason = waiting["reason"]
        elif term and phase != "Running":
            reason = reason or term.get("reason")
    restarts = sum(c.get("restartCount", 0) for c in statuses)
    status = p.get("status", {})
    return [
        p["metadata"]["name"],
        f"{ready}/{len(containers)}",
        reason or phase,
        restarts,
        _age(p, now),
        status.get("podIP") or "<none>",
        p.get("spec", {}).get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


COLUMNS = {
    "nodes": (
        [
            ("Name", "string", "name", 0),
            ("Status", "string", "", 0),
            ("Roles", "string", "", 0),
            ("Age", "string", "", 0),
            ("Version", "string", "", 0),
            ("Internal-IP", "string", "", 1),
            ("External-IP", "string", "", 1),
            ("OS-Image", "string", "", 1),
            ("Kernel-Version", "string", "", 1),
            ("Container-Runtime", "string", "", 1),
        ],  # fmt: skip
        _node_row,
    ),
    "events": (
        [
            ("Last Seen", "string", "", 0),
            ("Type", "string", "", 0),
            ("Reason", "string", "", 0),
            ("Object", "string", "", 0),
            ("Subobject", "string", "", 1),
            ("Source", "string", "", 1),
            ("Message", "string", "", 0),
            ("First Seen", "string", "", 1),
            ("Count", "integer", "", 1),
            ("Name", "string", "name", 1),
        ],  # fmt: skip
        _event_row,
    ),
    "pods": (
        [
            ("Name", "string", "name", 0),
            ("Ready", "string", "", 0),
            ("Status", "string", "", 0),
            ("Restarts", "integer", "", 0),
            ("Age", "string", "", 0),
            ("IP", "string", "", 1),
            ("Node", "string", "", 1),
            ("Nominated Node", "string", "", 1),
            ("Readiness Gates", "string", "", 1),
        ],  # fmt: skip
        _pod_row,
    ),
}


def table(plural: str, objects: list[dict], list_meta: dict, now: float) -> dict:
    columns, row = COLUMNS.get(plural, ([("Name", "string", "name", 0), ("Age", "string", "", 0)], None))
    if plural == "events" and objects and "involvedObject" not in objects[0]:  # events.k8s.io: name and age
        columns, row = [("Name", "string", "name", 0), ("Age", "string", "", 0)], None
    rows = []
    for obj in objects:
        cells = row(obj, now) if row else [obj["metadata"]["name"], _age(obj, now)]
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        rows.append(
            {
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta},
            }
        )
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {"name": n, "type": t, "format": f, "description": n, "priority": p} for n, t, f, p in columns
        ],
        "rows": rows,
    }
