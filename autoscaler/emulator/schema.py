"""The built-in kinds' schemas: kube-apiserver's OpenAPI definitions as the ``kubernetes-validate`` package ships
them (``_definitions.json`` of the server's minor: every type with its properties, the
``x-kubernetes-group-version-kind`` of each kind and the strategic-merge ``x-kubernetes-patch-strategy`` /
``x-kubernetes-patch-merge-key`` of each list).

What the emulator does with them, as the API server does with its Go types:

- **decoding**: a field no type has is dropped from what is stored; with ``fieldValidation=Strict`` the write is
  refused (400, ``strict decoding error: unknown field "spec.foo"``), with ``Warn`` (the default) it is a
  ``Warning`` header (k8s.io/apiserver pkg/endpoints/handlers/create.go, ``fieldValidation``); a value of the wrong
  JSON type is 400 ``cannot unmarshal``, as encoding/json reports it;
- **strategic merge patches** use the real merge keys and strategies (:func:`list_strategy`);
- **OpenAPI v3** (``/openapi/v3``, ``/openapi/v3/<group-version>``): the documents kubectl reads to learn that
  the server validates fields itself (the ``fieldValidation`` parameter of each operation) and to explain kinds.
"""

from __future__ import annotations

import functools
import json
import threading
from pathlib import Path

_LOCK = threading.Lock()
JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
GO_TYPES = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool", "object": "object",
            "array": "array"}  # fmt: skip


def _schema_dir(minor: int) -> Path | None:
    try:
        import kubernetes_validate
    except ImportError:  # pragma: no cover - a dev dependency, installed with the project
        return None
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    for m in range(minor, 20, -1):
        d = root / f"v1.{m}.0-local-strict"
        if (d / "_definitions.json").exists():
            return d
    return None


@functools.lru_cache(maxsize=2)
def definitions(minor: int) -> dict[str, dict]:
    d = _schema_dir(minor)
    if d is None:
        return {}
    with _LOCK:
        return json.loads((d / "_definitions.json").read_text())["$defs"]


@functools.lru_cache(maxsize=2)
def _kinds(minor: int) -> dict[tuple[str, str, str], str]:
    out = {}
    for name, d in definitions(minor).items():
        for gvk in d.get("x-kubernetes-group-version-kind") or ():
            out.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return out


def kind_definition(minor: int, group: str, version: str, kind: str) -> str | None:
    return _kinds(minor).get((group, version, kind))


def _resolve(defs: dict, node: dict | None) -> dict:
    seen = 0
    while node and isinstance(node.get("$ref"), str) and seen < 20:
        node = defs.get(node["$ref"].rsplit("/", 1)[-1]) or {}
        seen += 1
    return node or {}


def _types(node: dict) -> tuple[str, ...]:
    t = node.get("type")
    if t is None:
        return ()
    return tuple(x for x in ([t] if isinstance(t, str) else t) if x != "null")


class Decoded:
    """What decoding found: unknown fields (dropped from the object) and type errors."""

    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.type_errors: list[str] = []


def decode(minor: int, group: str, version: str, kind: str, obj: dict) -> Decoded:
    """Drop the fields of ``obj`` its kind does not have (in place); what was dropped and what had the wrong type."""
    out = Decoded()
    defs = definitions(minor)
    name = kind_definition(minor, group, version, kind)
    if not defs or name is None:
        return out
    _walk(defs, defs[name], obj, "", out, name.rsplit(".", 1)[-1])
    return out


def _walk(defs: dict, node: dict, value, path: str, out: Decoded, struct: str) -> None:
    node = _resolve(defs, node)
    if value is None or not node:
        return
    if "oneOf" in node:  # int-or-string, Quantity: a scalar
        if isinstance(value, dict | list):
            out.type_errors.append(_unmarshal(value, path, struct, "string"))
        return
    types = _types(node)
    if types and not any(isinstance(value, JSON_TYPES[t]) and not _bool_as_int(value, t) for t in types):
        out.type_errors.append(_unmarshal(value, path, struct, GO_TYPES.get(types[0], types[0])))
        return
    if isinstance(value, dict):
        props = node.get("properties")
        extra = node.get("additionalProperties")
        if props is not None:
            for key in list(value):
                sub = f"{path}.{key}" if path else key
                if key in props:
                    _walk(defs, props[key], value[key], sub, out, struct)
                elif node.get("x-kubernetes-preserve-unknown-fields") or isinstance(extra, dict):
                    continue
                else:
                    out.unknown.append(sub)
                    del value[key]
        elif isinstance(extra, dict):
            for key, item in value.items():
                _walk(defs, extra, item, f"{path}[{key}]", out, struct)
    elif isinstance(value, list):
        items = node.get("items")
        if items:
            for i, item in enumerate(value):
                _walk(defs, items, item, f"{path}[{i}]", out, struct)


def _bool_as_int(value, t: str) -> bool:
    return isinstance(value, bool) and t in ("integer", "number")


def _unmarshal(value, path: str, struct: str, go_type: str) -> str:
    found = {str: "string", bool: "bool", dict: "object", list: "array"}.get(type(value), "number")
    return f"json: cannot unmarshal {found} into Go struct field {struct}.{path} of type {go_type}"


def field_schema(minor: int, group: str, version: str, kind: str, path: list[str]) -> dict:
    """The schema of the field at ``path`` (names; list items are walked through) of a kind, {} if unknown."""
    defs = definitions(minor)
    name = kind_definition(minor, group, version, kind)
    if name is None:
        return {}
    node = defs[name]
    for key in path:
        node = _resolve(defs, node)
        if "items" in node and "properties" not in node:
            node = _resolve(defs, node["items"])
        node = (node.get("properties") or {}).get(key) or (
            node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else {}
        )
        if not node:
            return {}
    return node


class PatchMeta:
    """Strategic-merge metadata of a kind, walked alongside a patch (``child``, ``list_strategy``)."""

    def __init__(self, minor: int, node: dict | None) -> None:
        self.minor = minor
        self.node = node or {}

    @classmethod
    def of(cls, minor: int, group: str, version: str, kind: str) -> PatchMeta:
        name = kind_definition(minor, group, version, kind)
        return cls(minor, definitions(minor).get(name) if name else None)

    def _resolved(self) -> dict:
        return _resolve(definitions(self.minor), self.node)

    def child(self, key: str) -> PatchMeta:
        node = self._resolved()
        props = node.get("properties")
        if props is not None:
            return PatchMeta(self.minor, props.get(key))
        extra = node.get("additionalProperties")
        return PatchMeta(self.minor, extra if isinstance(extra, dict) else None)

    def items(self) -> PatchMeta:
        return PatchMeta(self.minor, self._resolved().get("items"))

    def list_strategy(self, key: str) -> tuple[str, str]:
        """(strategy, merge key) of the list field ``key``: ("merge", "name"), ("merge", "") for a set of
        primitives, ("replace", "") for an atomic list."""
        node = self._resolved()
        field = (node.get("properties") or {}).get(key) or {}
        strategy = field.get("x-kubernetes-patch-strategy", "")
        merge_key = field.get("x-kubernetes-patch-merge-key", "")
        if "merge" in strategy.split(","):
            return "merge", merge_key
        return "replace", ""

    def retains_keys(self) -> bool:
        return "retainKeys" in (self.node.get("x-kubernetes-patch-strategy") or "")

    @property
    def known(self) -> bool:
        return bool(self.node)


# --- OpenAPI v3 ----------------------------------------------------------------------------------------------
def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def openapi_root(resources) -> dict:
    """``/openapi/v3``: one entry per served group version."""
    paths = {}
    for r in resources:
        gv = _gv_path(r.group, r.version)
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_digest(gv)}"}
    return {"paths": dict(sorted(paths.items()))}


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:32].upper()


QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def openapi_document(minor: int, resources, group: str, version: str) -> dict | None:
    """``/openapi/v3/<gv>``: each resource's operations (with the ``fieldValidation`` parameter and the kind's
    ``x-kubernetes-group-version-kind``, which is what kubectl looks for) and the schemas they reach."""
    rs = [r for r in resources if r.group == group and r.version == version]
    if not rs:
        return None
    defs = definitions(minor)
    paths: dict = {}
    wanted: set[str] = set()
    prefix = "/" + _gv_path(group, version)
    for r in rs:
        name = kind_definition(minor, r.group, r.version, r.kind)
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        ref = {"$ref": f"#/components/schemas/{name}"} if name else {"type": "object"}
        if name:
            wanted.add(name)
        params = [
            {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for p in QUERY_PARAMS
        ]

        def op(action, verb, body=True, gvk=gvk, ref=ref, params=params, r=r):
            o = {
                "operationId": f"{verb}{r.kind}",
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params if body else [],
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
            }
            if body:
                o["requestBody"] = {"content": {"*/*": {"schema": ref}}, "required": True}
            return o

        base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}"
        paths[base] = {"get": op("list", "list", False), "post": op("post", "create")}
        paths[base + "/{name}"] = {
            "get": op("get", "read", False),
            "put": op("put", "replace"),
            "patch": op("patch", "patch"),
            "delete": op("delete", "delete", False),
        }
        for sub in r.subresources:
            if sub in ("status", "scale"):
                paths[f"{base}/{{name}}/{sub}"] = {"get": op("get", "read", False), "put": op("put", "replace"),
                                                   "patch": op("patch", "patch")}  # fmt: skip
    schemas = {}
    todo = list(wanted)
    while todo:
        n = todo.pop()
        if n in schemas or n not in defs:
            continue
        schemas[n] = _components(defs[n])
        todo.extend(_refs(defs[n]))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v1.{minor}.8"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _refs(node) -> list[str]:
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append(v.rsplit("/", 1)[-1])
            else:
                out.extend(_refs(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_refs(v))
    return out


def _components(node):
    """A definition with its refs pointing into ``#/components/schemas`` and JSON-schema-only keys removed."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out[k] = "#/components/schemas/" + v.rsplit("/", 1)[-1]
            elif k == "type" and isinstance(v, list):
                kept = [t for t in v if t != "null"]
                out[k] = kept[0] if kept else "object"
            elif k == "additionalProperties" and v is False:
                continue
            else:
                out[k] = _components(v)
        return out
    if isinstance(node, list):
        return [_components(v) for v in node]
    return node
