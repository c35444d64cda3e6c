"""Kubernetes resource quantities ("500m", "16Gi", "1e3") as floats: CPU in cores, memory in bytes.

Parsed by the project's one quantity parser (autoscaler.core.quantity, Kubernetes' exact grammar); a malformed
value raises ValueError (``QuantityError``)."""

from __future__ import annotations

from functools import lru_cache

from autoscaler.core.quantity import parse_exact


@lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float) -> float:
    return float(parse_exact(value))
