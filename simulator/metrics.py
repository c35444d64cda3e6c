"""What one simulated run measured, and the figures computed from it (definitions in docs/simulator.md).

A run records a piecewise-constant timeline (:class:`Sample`: the state right after each change), one
:class:`JobOutcome` per job, the policy's loops (:class:`Loop`) and counters; :func:`summarize` turns that into
the per-policy figures of ``--json`` and the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.traces import Job
from simulator.waits import breakdown


@dataclass(frozen=True)
class Sample:
    """The cluster from time ``t`` until the next sample."""

    t: float
    demand_gpus: int  # requested by pods not finished: running plus pending
    used_gpus: int  # requested by running pods
    capacity_gpus: int  # on registered nodes
    provisioned_gpus: int  # on instances that exist (booting ones included: they are billed)
    cost_per_hour: float  # USD per hour of the instances that exist
    capacity_by_region: tuple[int, ...] = ()  # capacity_gpus split by region, in RunRecord.regions order


@dataclass
class JobOutcome:
    job: Job
    start_s: float | None = None  # start of the attempt that ran to completion (all pods bound)
    end_s: float | None = None
    kills: int = 0  # attempts ended by the autoscaler (an eviction or a terminated node)
    kill_times: tuple[float, ...] = ()  # when each such attempt ended (s from the start), sorted


@dataclass(frozen=True)
class Loop:
    """One policy loop: when it ran, the GPUs requested from the cloud (desired capacity) before and after it,
    and the GPU demand (running and pending pods) then."""

    t: float
    requested_before: int
    requested_gpus: int
    demand_gpus: int


@dataclass(frozen=True)
class Burst:
    """Jobs submitted together: the jobs listed, from ``start_s`` to ``end_s`` (the last submission)."""

    start_s: float
    job_ids: tuple[str, ...]
    gpus: int
    end_s: float | None = None  # None: same as start_s

    @property
    def last_submit_s(self) -> float:
        return self.start_s if self.end_s is None else self.end_s


@dataclass
class RunRecord:
    policy: str
    regions: tuple[str, ...] = ()
    samples: list[Sample] = field(default_factory=list)
    jobs: dict[str, JobOutcome] = field(default_factory=dict)
    loops: list[Loop] = field(default_factory=list)
    api_calls: int = 0
    end_s: float = 0.0
    scale_events: list[dict] = field(default_factory=list)  # {"t", "group", "region", "from", "to"}
    warnings: int = 0  # warnings the autoscaler logged during the run
    first_warning: str | None = None
    scheduler: str = "bin-packing"  # the scheduler profile the run used (provision/scheduler.py PROFILES)
    commitment_discount: float = 0.0  # share of the on-demand price a commitment saves (static clusters)
    api_calls_by_region: dict[str, int] = field(default_factory=dict)
    api_calls_by_operation: dict[str, int] = field(default_factory=dict)
    gpu_hours_by_model: dict[str, float] = field(default_factory=dict)  # provisioned, per GPU model
    job_waits: list = field(default_factory=list)  # waits.JobWait per job: where its wait went
    nodes_bought: int = 0  # instances launched during the run (not those of the groups' minimum at the start)
    pods: int = 0  # pods the jobs are made of (replacements of killed pods not counted)
    pods_never_ran: int = 0  # of those, pods never started by the end of the run


def find_bursts(jobs: list[Job], window_s: float = 300.0, min_gpus: int = 32) -> list[Burst]:
    """Bursts in a trace: from a submission, the jobs submitted within ``window_s`` when together they ask for
    at least ``min_gpus`` GPUs; the next burst is looked for after its last job (greedy, in submission order)."""
    ordered = sorted(jobs, key=lambda j: (j.submit_s, j.id))
    bursts: list[Burst] = []
    i = 0
    while i < len(ordered):
        j = i
        total = 0
        while j < len(ordered) and ordered[j].submit_s < ordered[i].submit_s + window_s:
            total += ordered[j].gpus
            j += 1
        if total >= min_gpus:
            run = ordered[i:j]
            bursts.append(Burst(run[0].submit_s, tuple(x.id for x in run), total, run[-1].submit_s))
            i = j
        else:
            i += 1
    return bursts


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile with linear interpolation between closest ranks (numpy's default); 0 when empty."""
    return float(np.percentile(values, q)) if values else 0.0


def integrate(samples: list[Sample], end_s: float, attr: str) -> float:
    """The integral over time of a piecewise-constant sample attribute, in (unit x seconds), up to ``end_s``."""
    total = 0.0
    for cur, nxt in zip(samples, [*samples[1:], None], strict=True):
        stop = min(nxt.t if nxt else end_s, end_s)
        if stop > cur.t:
            total += getattr(cur, attr) * (stop - cur.t)
    return total


def job_wait_s(outcome: JobOutcome, end_s: float) -> float:
    """Submission to the start of the attempt that completed; an unfinished job counts as waiting until the end."""
    if outcome.start_s is None or outcome.end_s is None:
        return max(0.0, end_s - outcome.job.submit_s)
    return outcome.start_s - outcome.job.submit_s


def burst_to_running_s(record: RunRecord, burst: Burst) -> float | None:
    """From a burst's first submission to all of its jobs running; None when some never ran to completion."""
    starts = [record.jobs[j].start_s for j in burst.job_ids]
    if any(s is None for s in starts):
        return None
    return max(starts) - burst.start_s


def loops_to_request(record: RunRecord, burst: Burst) -> int | None:
    """The policy's loops, from the moment the whole burst was submitted, until the GPUs it had requested from
    the cloud (desired capacity) covered the GPU demand: 0 when they already did; None when they never did."""
    count = 0
    for loop in record.loops:
        if loop.t < burst.last_submit_s:
            continue
        if loop.requested_before >= loop.demand_gpus:
            return count
        count += 1
        if loop.requested_gpus >= loop.demand_gpus:
            return count
    return None


def summarize(record: RunRecord, bursts: list[Burst]) -> dict:
    """The figures of one policy: the ``--json`` entry."""
    end = record.end_s
    waits = [job_wait_s(o, end) for o in record.jobs.values()]
    prov = integrate(record.samples, end, "provisioned_gpus") / 3600
    used = integrate(record.samples, end, "used_gpus") / 3600
    to_running = [burst_to_running_s(record, b) for b in bursts]
    loops = [loops_to_request(record, b) for b in bursts]
    done_running = [x for x in to_running if x is not None]
    done_loops = [x for x in loops if x is not None]
    p95, p99 = percentile(waits, 95), percentile(waits, 99)
    return {
        "jobs": len(record.jobs),
        "jobs_finished": sum(1 for o in record.jobs.values() if o.end_s is not None),
        "wait_p50_s": round(percentile(waits, 50), 1),
        "wait_p95_s": round(percentile(waits, 95), 1),
        "wait_p99_s": round(percentile(waits, 99), 1),
        "wait_mean_s": round(float(np.mean(waits)) if waits else 0.0, 1),
        "gpu_hours_provisioned": round(prov, 1),
        "gpu_hours_used": round(used, 1),
        "gpu_hours_idle": round(prov - used, 1),
        "gpu_hours_by_model": dict(record.gpu_hours_by_model),
        "cost_usd": round(integrate(record.samples, end, "cost_per_hour") / 3600, 2),
        "jobs_killed": sum(1 for o in record.jobs.values() if o.kills),
        "job_kills": sum(o.kills for o in record.jobs.values()),
        "cost_committed_usd": (
            round(
                integrate(record.samples, end, "cost_per_hour") / 3600 * (1 - record.commitment_discount), 2
            )
            if record.commitment_discount
            else None
        ),
        "api_calls": record.api_calls,
        "api_calls_by_region": dict(record.api_calls_by_region),
        "api_calls_by_operation": dict(record.api_calls_by_operation),
        "scheduler": record.scheduler,
        "loops": len(record.loops),
        "bursts": len(bursts),
        "burst_to_running_p50_s": round(percentile(done_running, 50), 1) if done_running else None,
        "burst_to_running_max_s": round(max(done_running), 1) if done_running else None,
        "bursts_never_running": len(to_running) - len(done_running),
        "loops_to_request_burst_p50": percentile(done_loops, 50) if done_loops else None,
        "loops_to_request_burst_max": max(done_loops) if done_loops else None,
        "nodes_bought": record.nodes_bought,
        "pods": record.pods,
        "pods_never_ran": record.pods_never_ran,
        "simulated_s": round(end, 1),
        "wait_breakdown": breakdown(record.job_waits, p95, p99) if record.job_waits else None,
    }
