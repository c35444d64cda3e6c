"""Python values as HCL literals, laid out the way ``terraform fmt`` lays them out (the renders pass
``terraform fmt -check`` without being reformatted)."""

from __future__ import annotations

import json
import re

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _string(value: str) -> str:
    # JSON escapes are HCL escapes; "${" and "%{" would start a template sequence.
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def _key(key: str, bare: bool) -> str:
    return key if bare and _IDENT.match(key) else _string(key)


def inline(value: object) -> str:
    """A one-line literal: scalars, lists and objects (object keys bare where they are identifiers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(inline(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(str(k), True)} = {inline(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no HCL literal for {type(value).__name__}")


def literal(value: object, indent: int = 0) -> str:
    """A literal for the right-hand side of an attribute at ``indent`` spaces: a non-empty map or a list of
    maps spans several lines (one entry per line, ``=`` aligned as fmt aligns them), anything else one line."""
    pad = " " * (indent + 2)
    if isinstance(value, dict) and value:
        keys = [_key(str(k), False) for k in value]
        width = max(len(k) for k in keys)
        lines = [f"{pad}{k.ljust(width)} = {inline(v)}" for k, v in zip(keys, value.values(), strict=True)]
        return "{\n" + "\n".join(lines) + "\n" + " " * indent + "}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
        return "[\n" + "".join(f"{pad}{inline(v)},\n" for v in value) + " " * indent + "]"
    return inline(value)
