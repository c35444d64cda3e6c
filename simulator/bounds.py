"""The cost no policy can beat, so each policy's distance to the limit shows.

``lower_bound``: every job's useful GPU-hours (its GPUs times its run time, each pod as the workload splits it)
at the cheapest price per GPU-hour among the groups that can hold the pod (GPU groups whose only taint is the GPU
one, in any region, with at least the pod's GPUs per node), plus the CPU groups at their minimum size for the
trace's span (every policy pays those). It assumes perfect packing, instant boots, no idle GPU and no failed
attempt, so it is not reachable: it bounds, it does not predict.
"""

from __future__ import annotations

from clusterspec.spec import Cluster as Spec
from simulator.model.spec_groups import groups_from_spec
from simulator.traces import Job
from simulator.workload import GPU, split_job


def _gpus(group: dict) -> int:
    return int(float(group.get("allocatable", {}).get(GPU, 0) or 0))


def lower_bound(jobs: list[Job], spec: Spec, gpus_per_node: int) -> dict:
    groups = groups_from_spec(spec.model_dump(mode="json"))
    eligible = [
        (_gpus(g), g["price_per_hour"] / _gpus(g))
        for g in groups
        if _gpus(g) > 0 and g.get("price_per_hour") and all(t["key"] == GPU for t in g.get("taints") or ())
    ]
    useful = 0.0
    gpu_cost = 0.0
    for job in jobs:
        for shape in split_job(job, gpus_per_node):
            price = min(p for gpus, p in eligible if gpus >= shape.gpus)
            hours = shape.gpus * job.duration_s / 3600
            useful += hours
            gpu_cost += hours * price
    span_h = max(j.submit_s + j.duration_s for j in jobs) / 3600
    floor = sum(g["min"] * (g.get("price_per_hour") or 0.0) for g in groups if _gpus(g) == 0) * span_h
    return {
        "useful_gpu_hours": round(useful, 1),
        "gpu_cost_usd": round(gpu_cost, 2),
        "cpu_floor_usd": round(floor, 2),
        "cost_usd": round(gpu_cost + floor, 2),
    }
