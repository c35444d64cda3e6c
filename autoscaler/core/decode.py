"""Decoding snapshot files, Kubernetes list pages and watch lines straight into lean objects
(:mod:`autoscaler.core.lean`).

msgspec's typed decoder walks the JSON once in C and skips every field the lean schema does not name
(managedFields, env, probes, images...) without building Python objects for them. A pod's spec leaves and owner
references are kept as JSON text (:data:`autoscaler.core.lean.DecodedPod`): a Job's pods repeat them, so they are
shared by that text and only the first pod's are decoded into values. The result is converted to plain
kubectl-shaped dicts, the parser's input. Why msgspec: docs/benchmarks.md, "Decoding".

Input the typed decoder refuses (a kept field of the wrong structure, an ``x-`` extension key, NaN) is decoded again the plain way, so the parser sees exactly what ``json.loads`` gives
and reports every problem in its own words: a decoder error never reaches the user.
"""

from __future__ import annotations

import json
from typing import Any, Generic, TypeVar

import msgspec
from msgspec import UNSET, Struct, UnsetType

from autoscaler.core import lean

T = TypeVar("T")


class _ListMeta(Struct):
    resourceVersion: Any = None
    # a list's continue token; ``continue`` is a Python keyword
    continue_: Any = msgspec.field(default=None, name="continue")


class _Page(Struct, Generic[T]):
    metadata: _ListMeta | None = None
    items: list[T] | None = None


class _List(Struct, Generic[T]):
    """A kubectl ``List`` object (``kubectl get pods -A -o json``)."""

    apiVersion: Any = UNSET
    kind: Any = UNSET
    items: list[T] | None = None


class _SnapshotFile(Struct, forbid_unknown_fields=True):
    """A snapshot (docs/snapshot.md); what this does not describe takes the plain path."""

    pods: list[lean.DecodedPod] | _List[lean.DecodedPod] | UnsetType = UNSET
    nodes: list[lean.Node] | _List[lean.Node] | UnsetType = UNSET
    groups: Any = UNSET
    regions: Any = UNSET
    now: Any = UNSET
    namespaces: Any = UNSET
    pdbs: list[lean.Pdb] | None | UnsetType = UNSET
    persistentvolumeclaims: list[lean.Claim] | _List[lean.Claim] | None | UnsetType = UNSET
    persistentvolumes: list[lean.PersistentVolume] | _List[lean.PersistentVolume] | None | UnsetType = UNSET
    storageclasses: list[lean.StorageClass] | _List[lean.StorageClass] | None | UnsetType = UNSET
    scaling_failures: Any = UNSET
    group_state: Any = UNSET


class _Event(Struct):
    """One line of a watch: the object is kept as raw JSON until the type says how to decode it."""

    type: Any = None
    object: msgspec.Raw = msgspec.Raw(b"null")


_SNAPSHOT = msgspec.json.Decoder(_SnapshotFile)
_STORAGE = ("persistentvolumeclaims", "persistentvolumes", "storageclasses")
_EVENT = msgspec.json.Decoder(_Event)
_OBJECTS = {kind: msgspec.json.Decoder(schema) for kind, schema in lean.DECODING.items()}
_PAGES = {kind: msgspec.json.Decoder(_Page[schema]) for kind, schema in lean.DECODING.items()}
_PLAIN = msgspec.json.Decoder()


def _dicts(kind: str, items: list, shared: dict | None) -> list[dict]:
    return lean.lean_pods(items, shared) if kind == "Pod" else msgspec.to_builtins(items)


def snapshot(data) -> object:
    """The snapshot document (bytes, str or any buffer such as an mmap) with its pods, nodes and PDBs lean;
    json.JSONDecodeError when it is not JSON."""
    try:
        doc = _SNAPSHOT.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        # the plain path: the parser (or the JSON error) names what is wrong
        return json.loads(data if isinstance(data, bytes | str) else bytes(data))
    out = {}
    shared: dict = {}  # equal pod specs decoded once, shared (lean.lean_pods)
    for name in _SnapshotFile.__struct_fields__:
        value = getattr(doc, name)
        if value is UNSET:
            continue
        if name in ("pods", "nodes"):
            kind = "Pod" if name == "pods" else "Node"
            if isinstance(value, _List):
                items = None if value.items is None else _dicts(kind, value.items, shared)
                value = {**msgspec.to_builtins(_List(value.apiVersion, value.kind)), "items": items}
            else:
                value = _dicts(kind, value, shared)
        elif name == "pdbs" and value is not None:
            value = _dicts("PodDisruptionBudget", value, None)
        elif name in _STORAGE and value is not None:
            if isinstance(value, _List):
                items = None if value.items is None else msgspec.to_builtins(value.items)
                value = {**msgspec.to_builtins(_List(value.apiVersion, value.kind)), "items": items}
            else:
                value = msgspec.to_builtins(value)
        out[name] = value
    return out


def list_page(data: bytes | str, kind: str, shared: dict | None = None) -> tuple[list[dict], dict]:
    """The lean items of one page of a list response and the list's metadata (resourceVersion, continue);
    ``shared``: equal pod specs are kept once in it (:func:`autoscaler.core.lean.lean_pods`)."""
    try:
        page = _PAGES[kind].decode(data)
    except msgspec.ValidationError:
        body = _PLAIN.decode(data)  # an item of an unexpected structure: each kept whole or lean on its own
        transform = lean.TRANSFORMS[kind]
        return [transform(o, shared) for o in body.get("items") or []], body.get("metadata") or {}
    meta = page.metadata
    items = [lean.interned(o) for o in _dicts(kind, page.items or [], shared)]
    if meta is None:
        return items, {}
    return items, {"resourceVersion": meta.resourceVersion, "continue": meta.continue_}


OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")


def watch_event(line: bytes | str, kind: str, shared: dict | None = None) -> dict | None:
    """One watch line as ``{"type", "object", "raw_object"}``, its object lean when it is an object event of a
    kind :mod:`autoscaler.core.lean` knows (BOOKMARK and ERROR objects decoded plainly); None when the line is not
    JSON (as the kubernetes client's ``Watch.unmarshal_event``). One pass over the line, where the client makes
    three (loads, dumps, loads) before any transform."""
    try:
        event = _EVENT.decode(line)
        raw = event.object
        if event.type in OBJECT_EVENTS and kind in _OBJECTS:
            try:
                obj = _OBJECTS[kind].decode(raw)
            except msgspec.ValidationError:
                obj = lean.TRANSFORMS[kind](_PLAIN.decode(raw), shared)  # kept whole when odd
            else:
                obj = lean.interned(
                    lean.lean_pods([obj], shared)[0] if kind == "Pod" else msgspec.to_builtins(obj)
                )
        else:
            obj = _PLAIN.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return {"type": event.type, "object": obj, "raw_object": obj}
