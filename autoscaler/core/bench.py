"""The planner benchmark: fixed generated snapshots; per case pods, nodes, groups, parse and planning time,
pods per second, peak memory, and new nodes against the lower bound. ``autoscaler bench`` / ``invoke bench``."""

from __future__ import annotations

import math
import time
import tracemalloc
from dataclasses import dataclass

from autoscaler.core import generate
from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot


@dataclass(frozen=True)
class Case:
    name: str
    pods: int
    shapes: int
    nodes: int
    group_kinds: int = 10
    gpu_share: float = 0.5
    target_s: float | None = None
    gang_size: int = 0
    claims: int = 0  # claims each pending pod mounts (bound, listed in the snapshot)


CASES = [
    Case("burst-50k-4-shapes", pods=50_000, shapes=4, nodes=3_000, target_s=1.0),
    Case("burst-50k-3-claims", pods=50_000, shapes=4, nodes=3_000, claims=3),
    Case("mixed-10k-200-shapes", pods=10_000, shapes=200, nodes=500, target_s=2.0),
    Case("gpu-mixed-5k", pods=5_000, shapes=40, nodes=0, gpu_share=1.0),
    Case("identical-20k", pods=20_000, shapes=1, nodes=0, gpu_share=0.0),
    Case("gangs-1k-of-8", pods=8_000, shapes=10, nodes=1_000, gang_size=8),
    Case("many-shapes-10k-2000", pods=10_000, shapes=2_000, nodes=3_000),
]
CONFIG = PlannerConfig(max_new_nodes_per_loop=1_000_000)


def lower_bound(snapshot, result) -> int:
    """Per-resource lower bound on new nodes for the pods the plan put on new nodes, group by group:
    max over resources of ceil(total requests / node allocatable)."""
    groups = {g.name: g for g in snapshot.groups}
    pods = {p.key: p for p in snapshot.pods}
    need: dict[str, dict[str, int]] = {}
    for key, where in result.placements.items():
        if not where.startswith("new:"):
            continue
        gname = where.split(":")[1]
        acc = need.setdefault(gname, {})
        for r, q in pods[key].shape.requests:
            acc[r] = acc.get(r, 0) + q
    total = 0
    for gname, acc in need.items():
        alloc = groups[gname].allocatable
        total += max(math.ceil(q / alloc[r]) for r, q in acc.items())
    return total


def run_case(case: Case, seed: int = 1) -> dict:
    data = generate.snapshot(
        pods=case.pods,
        shape_count=case.shapes,
        nodes=case.nodes,
        group_kinds=case.group_kinds,
        gpu_share=case.gpu_share,
        seed=seed,
        gang_size=case.gang_size,
        claims=case.claims,
    )
    for g in data["groups"]:
        g["max"] = max(g["max"], 100_000)
    plan(parse_snapshot(data), CONFIG)  # warm the shape and quantity caches as a running controller has them
    w0, c0 = time.perf_counter(), time.process_time()
    snap = parse_snapshot(data)
    c1 = time.process_time()
    result = plan(snap, CONFIG)
    w2, c2 = time.perf_counter(), time.process_time()
    tracemalloc.start()
    plan(parse_snapshot(data), CONFIG)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    new = sum(result.scale_up.values())
    return {
        "case": case.name,
        "pods": case.pods,
        "nodes": case.nodes,
        "groups": len(snap.groups),
        "parse_cpu_s": round(c1 - c0, 3),
        "plan_cpu_s": round(c2 - c1, 3),
        "wall_s": round(w2 - w0, 3),
        "pods_per_s": int(case.pods / (c2 - c0)),
        "peak_mib": round(peak / 2**20, 1),
        "new_nodes": new,
        "lower_bound": lower_bound(snap, result),
        "unschedulable": len(result.unschedulable),
        "target_s": case.target_s,
    }


def table(rows: list[dict]) -> str:
    head = (
        "| case | pods | nodes | groups | parse CPU s | plan CPU s | wall s | pods/s (CPU) | peak MiB | new nodes "
        "| lower bound |"
    )
    out = [head, "|" + "---|" * 11]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['pods']:,} | {r['nodes']:,} | {r['groups']} | {r['parse_cpu_s']} | {r['plan_cpu_s']} "
            f"| {r['wall_s']} | {r['pods_per_s']:,} | {r['peak_mib']} | {r['new_nodes']:,} | {r['lower_bound']:,} |"
        )
    return "\n".join(out)
