"""Kubernetes quantities as integer milli-units, and the names of resources the planner accepts.

Quantities are parsed with the Kubernetes client's own parser (``parse_quantity``, which returns a Decimal) and
converted once to an integer count of thousandths, rounded up: ``"7900m"`` -> 7900, ``"1Gi"`` -> 1073741824000.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from kubernetes.utils.quantity import parse_quantity

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
_EXTENDED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
RESOURCE_HINT = (
    "cpu, memory, ephemeral-storage, pods, hugepages-<size> or a domain-prefixed name such as nvidia.com/gpu"
)


class QuantityError(ValueError):
    """A quantity or resource name that is not valid; the message says what would be right."""


@lru_cache(maxsize=65536)
def milli(value: str | int | float) -> int:
    """``value`` in thousandths of its unit, rounded up; QuantityError when it is not a Kubernetes quantity."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f'{value!r} is not a quantity; use e.g. "500m", "2", "64Gi"')
    try:
        d = parse_quantity(value)
    except (ValueError, TypeError, ArithmeticError):
        raise QuantityError(f'{value!r} is not a Kubernetes quantity; use e.g. "500m", "2", "64Gi"') from None
    if d < 0:
        raise QuantityError(f"{value!r} is negative; quantities are zero or more")
    return math.ceil(d * 1000)


@lru_cache(maxsize=4096)
def check_resource_name(name: str) -> str | None:
    """None when ``name`` is a resource Kubernetes accepts, else what is wrong with it."""
    if name in STANDARD_RESOURCES or name.startswith("hugepages-") or _EXTENDED.match(name):
        return None
    return f"unknown resource {name!r}; use {RESOURCE_HINT}"


def format_amount(resource: str, amount_milli: int) -> str:
    """A readable amount: ``cpu`` 2500 -> ``2.5``, memory in Gi/Mi, counts as integers."""
    value = amount_milli / 1000
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size:
                return f"{value / size:.3g}{unit}"
        return f"{value:g}"
    return f"{value:g}"


def parse_resources(raw: object, where: str, errors: list[str]) -> dict[str, int]:
    """A resource list (``{"cpu": "2", ...}``) as milli-units; problems appended to ``errors`` as lines."""
    out: dict[str, int] = {}
    if raw is None:
        return out
    if not isinstance(raw, dict):
        errors.append(f"{where}: expected a mapping of resource to quantity, got {type(raw).__name__}")
        return out
    for name, value in raw.items():
        problem = check_resource_name(name)
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        try:
            out[name] = milli(value)
        except QuantityError as e:
            errors.append(f"{where}.{name}: {e}")
    return out
