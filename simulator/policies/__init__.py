"""The policies a simulation compares: ours (``batch``: the real controller and planner) and the baselines, each
configured as its best users would (docs/simulator.md)."""

from __future__ import annotations

from simulator.policies.base import Policy, PolicyContext

POLICIES = (
    "batch",
    "batch-lean",
    "ca-regional",
    "ca-regional-protected",
    "ca-primary",
    "ca-primary-protected",
    "ca-ideal",
    "ca-ideal-protected",
    "karpenter-primary",
    "karpenter-ideal",
    "target-tracking",
    "static-peak",
    "static-p95",
)
# cluster-autoscaler as deployed (policies/ca_like.py): one process per region, one in the primary region only,
# and one over every region (no real deployment: an idealised bound); each with the lab's jobs protected too
CA_POLICIES = {
    "ca-regional": "CaRegionalPolicy",
    "ca-regional-protected": "CaRegionalProtectedPolicy",
    "ca-primary": "CaPrimaryPolicy",
    "ca-primary-protected": "CaPrimaryProtectedPolicy",
    "ca-ideal": "CaIdealPolicy",
    "ca-ideal-protected": "CaIdealProtectedPolicy",
}


def make_policy(name: str, ctx: PolicyContext, run) -> Policy:
    """The policy called ``name`` over the run's interfaces; ``run`` gives ours the model's timers."""
    if name in ("batch", "batch-lean"):
        from simulator.policies.batch import BatchPolicy, LeanBatchPolicy

        return (BatchPolicy if name == "batch" else LeanBatchPolicy)(ctx, run)
    if name in CA_POLICIES:
        from simulator.policies import ca_like

        return getattr(ca_like, CA_POLICIES[name])(ctx)
    if name in ("karpenter-primary", "karpenter-ideal"):
        from simulator.policies import karpenter_like

        cls = (
            karpenter_like.KarpenterPrimaryPolicy
            if name == "karpenter-primary"
            else karpenter_like.KarpenterIdealPolicy
        )
        return cls(ctx)
    if name == "target-tracking":
        from simulator.policies.target import TargetTrackingPolicy

        return TargetTrackingPolicy(ctx)
    if name == "static-peak":
        from simulator.policies.static import StaticPolicy

        return StaticPolicy(ctx)
    if name == "static-p95":
        from simulator.policies.static import StaticP95Policy

        return StaticP95Policy(ctx)
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
