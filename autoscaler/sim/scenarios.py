"""Workloads to simulate: a trace file, or a generated story.

``burst``: the story that motivates the batch autoscaler. A researcher tries one GPU, an hour later runs 60 GPUs
of experiments, and in the afternoon a sweep of 1,600 GPUs, all within a day; meanwhile the first region runs out
of 8-GPU V100 capacity (InsufficientInstanceCapacity after a handful of instances), so whoever scales must spill
over to the next region. Deterministic: no randomness, the same jobs each run.
"""

from __future__ import annotations

from pathlib import Path

from autoscaler.sim.metrics import Burst
from autoscaler.sim.runner import Scenario
from autoscaler.sim.traces import Job, load_trace
from clusterspec.spec import Cluster as Spec

SCENARIOS = ("burst",)


def trace_scenario(path: str | Path) -> Scenario:
    jobs = load_trace(path)
    return Scenario(name=Path(path).name, description=f"trace {path} ({len(jobs):,} jobs)", jobs=jobs)


def burst_scenario(spec: Spec, *, ice_limit: int = 6) -> Scenario:
    """1 GPU at t=0; 60 GPUs at 1 h; 1,600 GPUs at 4 h; the first region's preferred 8-GPU type capped at
    ``ice_limit`` instances from 3 h 55 min on (set back to unlimited at 12 h)."""
    jobs: list[Job] = [Job("job-00000", 0, 1, 3 * 3600)]
    # 60 GPUs: 12 single-GPU trials, 4 jobs of 4 GPUs, 4 jobs of 8 GPUs (an hour to two each)
    shapes = [1] * 12 + [4] * 4 + [8] * 4
    for i, g in enumerate(shapes):
        jobs.append(Job(f"job-{len(jobs):05d}", 3600 + 5 * i, g, 3600 + 300 * (i % 4)))
    # 1,600 GPUs at once: a sweep of 64 jobs of 8 GPUs, 48 of 16 (Indexed Jobs of 2 pods), 16 of 20 (3 pods)
    start = 4 * 3600
    sweep = [8] * 64 + [16] * 48 + [20] * 16
    for i, g in enumerate(sweep):
        jobs.append(Job(f"job-{len(jobs):05d}", start, g, 2 * 3600 + 600 * (i % 6)))
    first = spec.spill_over_order[0]
    preferred = _preferred_big_type(spec, first)
    return Scenario(
        name="burst",
        description=(
            f"1 GPU, then 60 GPUs at 1 h, then 1,600 GPUs at 4 h; {first} holds at most {ice_limit} "
            f"{preferred} instances from 3 h 55 min to 12 h (InsufficientInstanceCapacity beyond that)"
        ),
        jobs=jobs,
        capacity_events=[(4 * 3600 - 300, first, preferred, ice_limit), (12 * 3600, first, preferred, None)],
        bursts=[
            _burst(jobs[:1]),
            _burst(jobs[1 : 1 + len(shapes)]),
            _burst(jobs[1 + len(shapes) :]),
        ],
        horizon_slack_s=86400.0,
    )


def _burst(jobs: list[Job]) -> Burst:
    return Burst(jobs[0].submit_s, tuple(j.id for j in jobs), sum(j.gpus for j in jobs), jobs[-1].submit_s)


def _preferred_big_type(spec: Spec, region: str) -> str:
    """The instance type of the highest-priority 8-GPU group with only the GPU taint in ``region``."""
    groups = [
        g
        for g in spec.region(region).node_groups
        if g.gpus >= 8 and all(t.key == "nvidia.com/gpu" for t in g.taints)
    ]
    return max(groups, key=lambda g: g.priority).instance_type
