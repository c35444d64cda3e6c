"""Taints and tolerations as the node lifecycle, the scheduler and admission apply them.

- ``tolerates``: the scheduler's matching (k8s.io/api core/v1 ``Toleration.ToleratesTaint``:
  an empty key with ``Exists`` matches every key, an empty effect every effect, ``Equal`` compares values).
- ``untolerated``: the first NoSchedule/NoExecute taint the tolerations leave (PreferNoSchedule never blocks).
- ``add_default_tolerations``: the ``DefaultTolerationSeconds`` admission plugin
  (plugin/pkg/admission/defaulttolerationseconds): not-ready and unreachable NoExecute tolerations of 300 s for
  a pod that has none for them.
"""

from __future__ import annotations

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
BLOCKING = ("NoSchedule", "NoExecute")


def tolerates(toleration: dict, taint: dict) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if not key:
        return op == "Exists"
    if key != taint.get("key"):
        return False
    if op == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(tolerations: list[dict] | None, taints: list[dict] | None, effects=BLOCKING) -> dict | None:
    for taint in taints or ():
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations or ()):
            return taint
    return None


def add_default_tolerations(spec: dict, seconds: int) -> None:
    """What DefaultTolerationSeconds admission adds to a pod's spec (in place)."""
    tolerations = spec.get("tolerations") or []
    added = []
    for key in (NOT_READY, UNREACHABLE):
        # the plugin's own test: the key (or none) and NoExecute (or no effect), whatever the operator
        if not any(
            t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
            for t in tolerations
        ):
            added.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
            )
    if added:
        spec["tolerations"] = [*tolerations, *added]
