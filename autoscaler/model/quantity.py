"""Kubernetes resource quantities ("500m", "16Gi", "1e3") as floats: CPU in cores, memory in bytes."""

from __future__ import annotations

import re
from functools import lru_cache

_SUFFIX = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> float:
    if isinstance(value, int | float):
        return float(value)
    m = _RE.match(str(value).strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"invalid quantity {value!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2)]
