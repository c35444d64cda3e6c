"""Kubernetes quantities as integer milli-units, and the names of resources the planner accepts.

The one parser of quantities in the project (the cluster model uses it too). It follows
Kubernetes' grammar exactly (k8s.io/apimachinery/pkg/api/resource/quantity.go, ``ParseQuantity``)::

    <quantity>  ::= <sign>? <number> <suffix>       <number> ::= <digits> | <digits>.<digits>? | .<digits>
    <suffix>    ::= "" | n | u | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei | (e|E) <sign>? <digits>

so ``NaN``, ``Infinity``, ``1_000``, ``2K``, ``1e3Mi``, ``" 1"`` and ``"1.5.2"`` are refused, and the value is
exact (a fraction, never a float). :func:`milli` converts once to an integer count of thousandths, rounded up:
``"7900m"`` -> 7900, ``"1Gi"`` -> 1073741824000. Values beyond an int64 (Kubernetes' ``Value()``) are refused
as out of range.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
_EXTENDED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
RESOURCE_HINT = (
    "cpu, memory, ephemeral-storage, pods, hugepages-<size> or a domain-prefixed name such as nvidia.com/gpu"
)
_QUANTITY = re.compile(
    r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)"
)
_SUFFIX = {
    None: Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
MAX_VALUE = 2**63 - 1  # Kubernetes reads a quantity's Value() as an int64
HINT = 'use e.g. "500m", "2", "64Gi"'


class QuantityError(ValueError):
    """A quantity or resource name that is not valid; the message says what would be right."""


@lru_cache(maxsize=65536)
def parse_exact(value: str | int | float) -> Fraction:
    """The exact value of a quantity (signed); QuantityError when it is not one by Kubernetes' grammar.

    A JSON number is read as its text, as the API server's JSON decoder does; NaN and infinities are refused."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"{value!r} is not a quantity; {HINT}")
    text = value if isinstance(value, str) else repr(value)
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity; {HINT}")
    sign, number, exponent, suffix = m.groups()
    whole, _, frac = number.partition(".")
    amount = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
    if exponent is not None:
        e = int(exponent)
        if e > 30:  # 10^31 is beyond any int64: refuse before building a huge number
            if amount:
                raise QuantityError(f"{value!r} is out of range; quantities are at most 2^63-1 (about 9.2E)")
            e = 0
        amount *= Fraction(10) ** max(e, -40)  # smaller still rounds up to the same milli-unit
    else:
        amount *= _SUFFIX[suffix]
    if abs(amount) > MAX_VALUE:
        raise QuantityError(f"{value!r} is out of range; quantities are at most 2^63-1 (about 9.2E)")
    return -amount if sign == "-" else amount


@lru_cache(maxsize=65536)
def milli(value: str | int | float) -> int:
    """``value`` in thousandths of its unit, rounded up; QuantityError when it is not a Kubernetes quantity."""
    d = parse_exact(value)
    if d < 0:
        raise QuantityError(f"{value!r} is negative; quantities are zero or more")
    return math.ceil(d * 1000)


def is_extended(name: str) -> bool:
    """An extended resource (nvidia.com/gpu, example.com/fpga): counted in whole units by Kubernetes."""
    return "/" in name and not name.startswith(("kubernetes.io/", "requests."))


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
            q = milli(value)
        except QuantityError as e:
            errors.append(f"{where}.{name}: {e}")
            continue
        if q % 1000 and is_extended(name):
            # apimachinery validation: "must be an integer" for extended resources (ValidateResourceQuantityValue)
            errors.append(
                f"{where}.{name}: {value!r} is not a whole number; {name} is counted in whole units"
            )
            continue
        out[name] = q
    return out
