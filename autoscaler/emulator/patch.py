"""PATCH bodies: JSON patch (RFC 6902, via ``jsonpatch``), JSON merge patch (RFC 7386) and strategic merge patch.

Strategic merge follows each list's patch strategy and merge key from the kind's OpenAPI schema
(``x-kubernetes-patch-strategy``/``-merge-key``, :class:`autoscaler.emulator.schema.PatchMeta`): lists with a merge
key (``status.conditions`` by type, ``ownerReferences`` by uid, containers by name, Service ports by port...)
merge item by item, other lists (``spec.taints``, tolerations) are replaced whole; ``null`` deletes a key; the
directives ``$patch: replace|delete|merge``, ``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and
``$setElementOrder/<field>`` are understood. Without a schema (a bare object) the common merge keys below apply.
"""

from __future__ import annotations

import copy

import jsonpatch

from autoscaler.emulator.errors import UnsupportedMediaType
from autoscaler.model.store import Invalid

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)

# field name -> merge key ("" : a list of primitives merged as a set)
MERGE_KEYS = {
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "finalizers": "",
}


def apply_patch(obj: dict, patch, content_type: str, meta=None) -> dict:
    """The patched copy of ``obj``; ``meta`` (a schema.PatchMeta) gives strategic merge its keys."""
    ctype = (content_type or "").split(";")[0].strip()
    if ctype == JSON_PATCH:
        if not isinstance(patch, list):
            raise Invalid("a JSON patch must be a list of operations")
        try:
            return jsonpatch.apply_patch(obj, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            raise Invalid(f"the JSON patch could not be applied: {e}") from None
    if not isinstance(patch, dict):
        raise Invalid("a merge patch must be a JSON object")
    if ctype == MERGE_PATCH:
        return merge_patch(copy.deepcopy(obj), patch)
    if ctype in (STRATEGIC_PATCH, APPLY_PATCH):
        # server-side apply onto an existing object: merged with the strategic merge keys (field ownership and
        # managedFields are not modelled: no conflicts are reported)
        return strategic_merge(copy.deepcopy(obj), patch, meta)
    raise UnsupportedMediaType(
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_PATCH}, {APPLY_PATCH}"
    )


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def strategic_merge(target, patch: dict, meta=None):
    if meta is not None and not meta.known:
        meta = None
    if not isinstance(target, dict):
        target = {}
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k.startswith("$"):
            if k.startswith("$deleteFromPrimitiveList/"):
                field = k.split("/", 1)[1]
                target[field] = [x for x in target.get(field) or [] if x not in v]
            continue
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict):
            merged = strategic_merge(target.get(k), v, meta.child(k) if meta else None)
            if merged is None:
                target.pop(k, None)
            else:
                target[k] = merged
        elif isinstance(v, list) and meta is not None:
            strategy, key = meta.list_strategy(k)
            if strategy == "merge":
                target[k] = _merge_list(target.get(k) or [], v, key, meta.child(k).items())
            else:
                target[k] = [x for x in copy.deepcopy(v) if not (isinstance(x, dict) and "$patch" in x)]
        elif isinstance(v, list) and k in MERGE_KEYS:
            target[k] = _merge_list(target.get(k) or [], v, _fallback_key(k, v))
        else:
            target[k] = copy.deepcopy(v)
    if retain is not None:
        for k in list(target):
            if k not in retain:
                del target[k]
    return target


def _fallback_key(field: str, items: list) -> str:
    """Container ports merge by containerPort, a Service's by port (the two types' merge keys)."""
    if field == "ports" and any(
        isinstance(i, dict) and "port" in i and "containerPort" not in i for i in items
    ):
        return "port"
    return MERGE_KEYS[field]


def _merge_list(current: list, patch: list, key: str, meta=None) -> list:
    if key == "":
        out = list(current)
        out += [x for x in patch if x not in out]
        return out
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    out = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise Invalid(f"strategic merge patch: list items need the merge key {key!r}")
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            out[idx] = strategic_merge(out[idx], item, meta)
    return out
