"""The policies a simulation compares: ours (``batch``: the real controller and planner) and the baselines."""

from __future__ import annotations

from autoscaler.sim.policies.base import Policy, PolicyContext

POLICIES = ("batch", "step", "ca-like", "static")


def make_policy(name: str, ctx: PolicyContext, run) -> Policy:
    """The policy called ``name`` over the run's interfaces; ``run`` gives ours the model's timers."""
    if name == "batch":
        from autoscaler.sim.policies.batch import BatchPolicy

        return BatchPolicy(ctx, run)
    if name == "step":
        from autoscaler.sim.policies.step import StepPolicy

        return StepPolicy(ctx)
    if name == "ca-like":
        from autoscaler.sim.policies.ca_like import CaLikePolicy

        return CaLikePolicy(ctx)
    if name == "static":
        from autoscaler.sim.policies.static import StaticPolicy

        return StaticPolicy(ctx)
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")
