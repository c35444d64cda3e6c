"""Benchmark: replay a job trace through the model alone (a static cluster, no planner) and print figures.

    python -m simulator.bench_model [TRACE.csv] [--nodes 200] [--instance-type p3.16xlarge]

Measures what the simulator pays for the model itself: scheduling passes, predicate calls, wall time.
"""

from __future__ import annotations

import argparse
import csv
import math
import time

from clusterspec.catalog import instance_type
from simulator.model import DURATION_ANNOTATION, ClusterModel, VirtualClock

DEFAULT_TRACE = "week"  # a shipped trace (simulator/data), by its short name, or a CSV path
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def job_pods(i: int, gpus: int, duration: float, per_node: int) -> list[dict]:
    n = max(1, math.ceil(gpus / per_node))
    out = []
    for k in range(n):
        g = min(per_node, gpus - k * per_node) if gpus else 0
        labels = {"batch.kubernetes.io/job-name": f"job-{i}"}
        if n > 1:
            labels["batch.kubernetes.io/job-completion-index"] = str(k)
        out.append(
            {
                "metadata": {
                    "name": f"job-{i}-{k}",
                    "namespace": "research",
                    "labels": labels,
                    "annotations": {DURATION_ANNOTATION: str(duration)},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "train",
                            "resources": {
                                "requests": {
                                    "cpu": f"{3 * g}",
                                    "memory": f"{12 * g}Gi",
                                    "nvidia.com/gpu": str(g),
                                }
                            },
                        }
                    ],
                    "tolerations": [TOLERATION],
                },
            }
        )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "trace", nargs="?", default=DEFAULT_TRACE, help="week, ee9e8c or a CSV path (default: week)"
    )
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--instance-type", default="p3.16xlarge")
    args = ap.parse_args(argv)
    from simulator.traces import resolve_trace

    with open(resolve_trace(args.trace), newline="") as f:
        jobs = [
            (float(r["submit_time_s"]), int(r["gpus"]), float(r["duration_s"])) for r in csv.DictReader(f)
        ]
    per_node = instance_type(args.instance_type).gpus or 1
    group = {
        "name": "static",
        "region": "us-west-2",
        "zones": ["us-west-2a"],
        "instance_type": args.instance_type,
        "min": 0,
        "max": args.nodes,
        "desired": args.nodes,
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    t_start = time.perf_counter()
    model = ClusterModel(VirtualClock(start=0.0), [group], terminated_pod_ttl_s=0)
    for i, (submit, gpus, duration) in enumerate(jobs):
        for pod in job_pods(i, gpus, duration, per_node):
            model.queue.push(submit, model.submit_pod, pod)
    steps = 0
    while (t := model.next_event_time()) is not None:
        model.advance(t)
        steps += 1
    elapsed = time.perf_counter() - t_start
    s = model.stats
    waits = sorted(
        r.started - r.created
        for r in model.records.values()
        if r.started is not None and r.namespace != "kube-system"  # not the device plugin pods
    )
    print(
        f"trace: {args.trace} ({len(jobs)} jobs, {s.pods_submitted} pods) on {args.nodes} x {args.instance_type}"
    )
    print(f"model seconds simulated: {model.now():.0f}; advance() steps: {steps}")
    print(f"scheduling passes: {model.scheduler.passes}; predicate calls: {model.scheduler.attempts}")
    print(
        f"pods bound: {s.pods_bound}; succeeded: {s.pods_succeeded}; never started: {s.pods_submitted - s.pods_bound}"
    )
    if waits:
        print(f"wait p50/p95: {waits[len(waits) // 2]:.0f} s / {waits[int(len(waits) * 0.95)]:.0f} s")
    print(f"wall time: {elapsed:.2f} s")


if __name__ == "__main__":
    main()
