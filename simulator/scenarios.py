"""Workloads to simulate: a trace file, or a generated story.

``burst``: the story that motivates the batch autoscaler. A researcher tries one GPU, an hour later runs 60 GPUs
of experiments, and in the afternoon a sweep of 1,600 GPUs, all within a day; meanwhile the first region runs out
of 8-GPU V100 capacity (InsufficientInstanceCapacity after a handful of instances), so whoever scales must spill
over to the next region. Deterministic: no randomness, the same jobs each run.

``demo``: the bursts of ``make demo`` (demos/autoscaler_demo/), in model time: 1 GPU, then 60 GPUs 6 minutes later,
then 320 GPUs at 16 minutes (61 pods: 59 nodes when packed), with us-west-2 holding 2 p3.16xlarge and no
p4d.24xlarge; the run is watched until 75 minutes after the last burst, as the demo watches it. The scenario the
side-by-side with the real cluster-autoscaler ran (issue 27; ``tests/simulator/test_demo_scenario.py``
holds the simulator to what was measured there).
"""

from __future__ import annotations

from pathlib import Path

from clusterspec.spec import Cluster as Spec
from simulator.metrics import Burst
from simulator.runner import Scenario
from simulator.traces import Job, load_trace

SCENARIOS = ("burst", "demo", "churn")

# The demo's waves (demos/autoscaler_demo/workload.py builds its pods from these): (model seconds after the first
# wave, title, [(GPUs, duration s), ...]); the demo submits them at 0, 6 and 16 wall seconds at 60x.
DEMO_WAVES: list[tuple[float, str, list[tuple[int, float]]]] = [
    (0.0, "one GPU to try an idea", [(1, 1800)]),
    (
        360.0,
        "60 GPUs of experiments",
        [(1, 1200 + 60 * i) for i in range(12)] + [(4, 1800)] * 4 + [(8, 2400)] * 4,
    ),
    (960.0, "a 320-GPU sweep", [(8, 1500 + 30 * i) for i in range(24)] + [(16, 1800)] * 8),
]
DEMO_PREFIXES = ("try", "exp", "sweep")
DEMO_WATCH_S = 4500.0  # the demo gives up 75 (wall) seconds after its last wave: 75 minutes of model time


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


def demo_jobs() -> list[list[Job]]:
    """The demo's jobs, wave by wave (each job's ``submit_s`` is its wave's time)."""
    return [
        [Job(f"{prefix}-{i:02d}", at, g, d) for i, (g, d) in enumerate(shapes)]
        for (at, _, shapes), prefix in zip(DEMO_WAVES, DEMO_PREFIXES, strict=True)
    ]


def demo_capacity(spec: Spec) -> dict[tuple[str, str], int]:
    """The demo's capacity in the first region: 2 instances of the preferred 8-GPU type, none of the other 8-GPU
    types the workload may use ((region, instance type) -> instances at most)."""
    first = spec.spill_over_order[0]
    groups = sorted(
        (
            g
            for g in spec.region(first).node_groups
            if g.gpus >= 8 and all(t.key == "nvidia.com/gpu" for t in g.taints)
        ),
        key=lambda g: -g.priority,
    )
    return {(first, g.instance_type): (2 if i == 0 else 0) for i, g in enumerate(groups)}


def demo_scenario(spec: Spec) -> Scenario:
    waves = demo_jobs()
    jobs = [j for wave in waves for j in wave]
    first = spec.spill_over_order[0]
    room = ", ".join(f"{n} {itype}" for (_, itype), n in demo_capacity(spec).items())
    return Scenario(
        name="demo",
        description=(
            f"make demo's bursts: 1 GPU, 60 GPUs at 6 min, 320 GPUs at 16 min ({sum(1 for _ in jobs)} jobs); "
            f"{first} holds {room}; watched until 75 min after the last burst"
        ),
        jobs=jobs,
        capacity=demo_capacity(spec),
        bursts=[_burst(w) for w in waves],
        horizon_s=DEMO_WAVES[-1][0] + DEMO_WATCH_S,
    )


CHURN_PODS = 2000
CHURN_DELETE_S = 2.0
CHURN_WATCH_S = 900.0


def churn_scenario() -> Scenario:
    """Pods that vanish (issue 38): 2,000 one-GPU jobs submitted at once, every pod deleted 2 s after its creation
    (a sweep cancelled at once, a controller that recreates pods under new names). Whatever is bought for them
    is waste; the run is watched for 15 minutes, past the 10-minute idle threshold."""
    jobs = [Job(f"churn-{i:04d}", 0.0, 1, 3600.0) for i in range(CHURN_PODS)]
    return Scenario(
        name="churn",
        description=(
            f"{CHURN_PODS:,} one-GPU jobs at once, each pod deleted {CHURN_DELETE_S:g} s after its creation; "
            f"watched for {CHURN_WATCH_S / 60:g} minutes"
        ),
        jobs=jobs,
        bursts=[],
        horizon_s=CHURN_WATCH_S,
        delete_after_s=CHURN_DELETE_S,
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
