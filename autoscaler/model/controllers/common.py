"""What the controllers share: owner references, events as client-go's event recorder writes them, creating
objects as an API client (through admission when an API server serves the model: ``model.api_create``), pod states."""

from __future__ import annotations

import secrets

from autoscaler.model.clock import iso
from autoscaler.model.store import StoreError

SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def suffix(n: int = 5) -> str:
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(n))


def controller_of(obj: dict) -> dict | None:
    return next((r for r in obj["metadata"].get("ownerReferences") or () if r.get("controller")), None)


def owned_by(obj: dict, owner: dict) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")


def owner_ref(owner: dict, api_version: str, kind: str) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_deleting(obj: dict) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def is_active(pod: dict) -> bool:
    return not is_terminal(pod) and not is_deleting(pod)


def is_ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def event(
    model, obj: dict, reason: str, message: str, type_: str = "Normal", component: str = ""
) -> dict | None:
    """A core/v1 Event about ``obj`` from ``component``; a repeat of the last one raises its count (client-go's
    EventCorrelator aggregates identical events)."""
    meta = obj["metadata"]
    ns = meta.get("namespace") or "default"
    key = (meta.get("uid"), reason, message, component)
    last = model._last_events.get(key)
    now = iso(model.clock.now())
    if last is not None and model.store.find("events", ns, last["metadata"]["name"]) is last:
        last["count"] = int(last.get("count") or 1) + 1
        last["lastTimestamp"] = now
        model.store.modified("events", last)
        return last
    name = f"{meta['name']}.{model.store.resource_version + 1:x}{suffix(3)}"
    ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind", ""), "name": meta["name"],
                           "namespace": meta.get("namespace", ""), "uid": meta.get("uid", ""),
                           "resourceVersion": meta.get("resourceVersion", "")},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
    }  # fmt: skip
    model.add_event(ev)
    model._last_events[key] = ev
    if len(model._last_events) > 4096:
        model._last_events.pop(next(iter(model._last_events)))
    return ev


def create(model, kind: str, obj: dict) -> tuple[dict | None, str]:
    """Create ``obj`` as a controller, through the API's admission when there is one: (object, "") or
    (None, the API's refusal message)."""
    try:
        if model.api_create is not None:
            return model.api_create(kind, obj), ""
        return model.create(kind, obj), ""
    except StoreError as e:
        return None, str(e)


def delete(model, kind: str, obj: dict, policy: str = "Background") -> None:
    """Delete ``obj`` as a controller (through the API when there is one); one already gone is left."""
    meta = obj["metadata"]
    if model.store.find(kind, meta.get("namespace"), meta["name"]) is not obj:
        return
    if model.api_delete is not None:
        model.api_delete(kind, obj, policy)
        return
    model.delete(kind, meta.get("namespace"), meta["name"])


def set_condition(status: dict, ctype: str, value: str, reason: str, message: str, now: str,
                  probe: bool = False) -> bool:  # fmt: skip
    """Set a condition (lastTransitionTime moves only when the status does); whether anything changed."""
    conds = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") == ctype:
            changed = (c.get("status"), c.get("reason"), c.get("message")) != (value, reason, message)
            if c.get("status") != value:
                c["lastTransitionTime"] = now
            if changed:
                c.update(status=value, reason=reason, message=message)
                if probe:
                    c["lastProbeTime"] = now
                c["lastUpdateTime"] = now
            return changed
    entry = {"type": ctype, "status": value, "reason": reason, "message": message, "lastTransitionTime": now}
    if probe:
        entry["lastProbeTime"] = now
    entry["lastUpdateTime"] = now
    conds.append(entry)
    return True


def remove_condition(status: dict, ctype: str) -> bool:
    conds = status.get("conditions") or []
    kept = [c for c in conds if c.get("type") != ctype]
    if len(kept) == len(conds):
        return False
    status["conditions"] = kept
    return True


def has_condition(status: dict, ctype: str) -> bool:
    return any(
        c.get("type") == ctype and c.get("status") == "True" for c in (status or {}).get("conditions") or ()
    )
