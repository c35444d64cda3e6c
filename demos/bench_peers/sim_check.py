"""The simulator's peers against the real ones: each burst of a ``bench-peers`` run replayed in the simulator
(``simulator``) with the policy that models each autoscaler, and the counts compared.

``ours`` is the simulator's ``batch`` (our real controller and planner over the cluster model);
``karpenter-<primary region>`` is ``karpenter-primary`` and ``karpenter-ideal`` is ``karpenter-ideal``
(``simulator/policies/karpenter_like.py``). Compared: nodes bought and pods never run, within ``TOLERANCE``
(the larger of 15% and one node or pod). Not compared: times (the simulator's nodes boot in minutes, as EC2's do;
kwok's register at once) and the 2-s deletion (the simulator's jobs run their duration).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from clusterspec.spec import Cluster as Spec
from demos.bench_peers.scenarios import Burst
from simulator.metrics import Burst as SimBurst
from simulator.runner import Scenario
from simulator.simulate import run_policy
from simulator.traces import Job

TOLERANCE = 0.15
SETTLE_S = 600.0  # the simulator's nodes boot in minutes: those bought before the burst are up by then
HORIZON_S = 4000.0  # past every job's end (a job's start is known once it ended); pods pending then never ran


def sim_policy(peer: str, spec: Spec) -> str | None:
    if peer == "ours":
        return "batch"
    if peer == f"karpenter-{spec.spill_over_order[0]}":
        return "karpenter-primary"
    if peer == "karpenter-ideal":
        return "karpenter-ideal"
    return None


def scenario(burst: Burst, spec: Spec) -> Scenario:
    """The burst at ``SETTLE_S``: the autoscaler runs before it, as the real one runs (and buys its warm pools
    and spare GPUs) before the submission."""
    jobs = [Job(j.id, SETTLE_S + j.submit_s, j.gpus, j.duration_s) for j in burst.jobs()]
    return Scenario(
        name=f"bench-{burst.name}",
        description=burst.title,
        jobs=jobs,
        capacity=burst.limits(spec),
        bursts=[SimBurst(SETTLE_S, tuple(j.id for j in jobs), sum(j.gpus for j in jobs))],
        horizon_s=HORIZON_S + SETTLE_S,
    )


def within(real: int, sim: int) -> bool:
    return abs(real - sim) <= max(1.0, TOLERANCE * max(real, sim))


def compare(
    rows: list[dict], bursts: list[Burst], spec: Spec, cache: Path | None = None, compute: bool = True
) -> list[dict]:
    """The checks of ``rows``; ``compute=False``: only those whose simulation ``cache`` holds."""
    by_name = {b.name: b for b in bursts}
    out = []
    for row in rows:
        burst = by_name.get(row["scenario"])
        policy = sim_policy(row["peer"], spec)
        if burst is None or policy is None or burst.delete_after_s is not None:
            continue
        sim = simulated(burst, spec, policy, cache, compute)
        if sim is None:
            continue
        out.append(
            {
                "scenario": row["scenario"],
                "peer": row["peer"],
                "sim_policy": policy,
                "nodes_bought": (row["nodes_bought"], sim["nodes_bought"]),
                "pods_never_run": (row["pods_never_run"], sim["pods_never_run"]),
                "agrees": within(row["nodes_bought"], sim["nodes_bought"])
                and within(row["pods_never_run"], sim["pods_never_run"]),
            }
        )
    return out


def simulated(
    burst: Burst, spec: Spec, policy: str, cache: Path | None = None, compute: bool = True
) -> dict | None:
    """The simulator's counts for ``burst`` under ``policy``; kept in ``cache`` (a folder, one file per burst
    and policy, with the spec's autoscaler settings and a digest of the jobs they ran): the 2,000-pod burst takes
    minutes."""
    settings = spec.autoscaler.model_dump(mode="json")
    replay = scenario(burst, spec)
    jobs = [[j.id, j.submit_s, j.gpus, j.duration_s] for j in replay.jobs]
    digest = hashlib.sha256(json.dumps(jobs).encode()).hexdigest()[:16]
    path = cache / f"{burst.name}@{policy}.json" if cache else None
    if path and path.exists():
        kept = json.loads(path.read_text())
        if kept.get("autoscaler") == settings and kept.get("jobs") == digest:
            return kept
    if not compute:
        return None
    record = run_policy(replay, spec, policy)
    out = {
        "nodes_bought": record.nodes_bought,
        "pods_never_run": record.pods_never_ran,
        "autoscaler": settings,
        "jobs": digest,  # the burst's jobs it ran (a change of them is a new simulation)
    }
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1))
    return out


def markdown(checks: list[dict]) -> str:
    lines = [
        "| scenario | autoscaler | simulator policy | nodes bought real / sim | never ran real / sim | agree |",
        "|---|---|---|---:|---:|---|",
    ]
    for c in checks:
        lines.append(
            f"| {c['scenario']} | {c['peer']} | {c['sim_policy']} | {c['nodes_bought'][0]} / {c['nodes_bought'][1]}"
            f" | {c['pods_never_run'][0]} / {c['pods_never_run'][1]} | {'yes' if c['agrees'] else 'no'} |"
        )
    return "\n".join(lines)
