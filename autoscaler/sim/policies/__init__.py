"""The policies a simulation compares: ours (``batch``: the real controller and planner) and the baselines, each
configured as its best users would (docs/simulator.md)."""

from __future__ import annotations

from autoscaler.sim.policies.base import Policy, PolicyContext

POLICIES = ("batch", "ca-like", "ca-like-protected", "target-tracking", "static-peak", "static-p95")


def make_policy(name: str, ctx: PolicyContext, run) -> Policy:
    """The policy called ``name`` over the run's interfaces; ``run`` gives ours the model's timers."""
    if name == "batch":
        from autoscaler.sim.policies.batch import BatchPolicy

        return BatchPolicy(ctx, run)
    if name == "ca-like":
        from autoscaler.sim.policies.ca_like import CaLikePolicy

        return CaLikePolicy(ctx)
    if name == "ca-like-protected":
        from autoscaler.sim.policies.ca_like import CaProtectedPolicy

        return CaProtectedPolicy(ctx)
    if name == "target-tracking":
        from autoscaler.sim.policies.target import TargetTrackingPolicy

        return TargetTrackingPolicy(ctx)
    if name == "static-peak":
        from autoscaler.sim.policies.static import StaticPolicy

        return StaticPolicy(ctx)
    if name == "static-p95":
        from autoscaler.sim.policies.static import StaticP95Policy

        return StaticP95Policy(ctx)
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
