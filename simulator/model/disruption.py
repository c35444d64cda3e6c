"""PodDisruptionBudget arithmetic, as the Eviction API applies it (policy/v1)."""

from __future__ import annotations

import math

from simulator.model import pods as P


def _scaled(value: int | str, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        x = int(value[:-1]) * total / 100
        return math.ceil(x) if round_up else math.floor(x)
    return int(value)


def budget_status(pdb: dict, pods_in_namespace: list[dict]) -> dict:
    """The PDB's status: expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed."""
    selector = (pdb.get("spec") or {}).get("selector")
    matching = [
        p
        for p in pods_in_namespace
        if not P.is_terminal(p) and P.selector_matches(selector, p["metadata"].get("labels"))
    ]
    expected = len(matching)
    healthy = sum(1 for p in matching if (p.get("status") or {}).get("phase") == "Running")
    spec = pdb.get("spec") or {}
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    elif spec.get("maxUnavailable") is not None:
        desired = expected - _scaled(spec["maxUnavailable"], expected, round_up=True)
    else:
        desired = expected
    return {
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": max(0, desired),
        "disruptionsAllowed": max(0, healthy - desired),
        "observedGeneration": (pdb.get("metadata") or {}).get("generation", 1),
    }


def refusing_budget(pod: dict, pdbs: list[dict], pods_in_namespace: list[dict]) -> dict | None:
    """The first PDB covering ``pod`` that allows no disruption now; None when eviction may proceed.

    Pods that are not Running (Pending, finished) may always be evicted, as the API server allows.
    """
    if (pod.get("status") or {}).get("phase") != "Running":
        return None
    labels = pod["metadata"].get("labels")
    for pdb in pdbs:
        if not P.selector_matches((pdb.get("spec") or {}).get("selector"), labels):
            continue
        if budget_status(pdb, pods_in_namespace)["disruptionsAllowed"] < 1:
            return pdb
    return None
