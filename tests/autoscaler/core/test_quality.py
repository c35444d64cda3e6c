"""Packing quality: identical pods need exactly the lower bound; any burst needs no more nodes than a plain
pod-by-pod First-Fit Decreasing; mixed GPU workloads stay within 2% of the per-resource lower bound."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.autoscaler.core.strategies import PROPERTIES

CONFIG = PlannerConfig(max_new_nodes_per_loop=100_000)
NODE = {"cpu": 16_000, "memory": 64 * 1024, "nvidia.com/gpu": 8, "pods": 110}  # milli-CPU, MiB, GPUs, pods


def _snapshot(shapes: list[tuple[int, int, int, int]]) -> dict:
    """One group of NODE-sized nodes; shapes: (count, milli-CPU, MiB, GPUs)."""
    group = {
        "name": "g",
        "region": "r",
        "zones": ["ra"],
        "instance_type": "p3.16xlarge",
        "min": 0,
        "max": 100_000,
        "desired": 0,
        "allocatable": {
            "cpu": f"{NODE['cpu']}m",
            "memory": f"{NODE['memory']}Mi",
            "nvidia.com/gpu": str(NODE["nvidia.com/gpu"]),
            "pods": str(NODE["pods"]),
        },
    }
    pods = []
    for s, (count, cpu, mem, gpu) in enumerate(shapes):
        req = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"} | ({"nvidia.com/gpu": str(gpu)} if gpu else {})
        spec = {"containers": [{"name": "c", "resources": {"requests": req}}]}
        for i in range(count):
            pods.append(
                {
                    "metadata": {"name": f"s{s}-{i}", "namespace": "q"},
                    "spec": spec,
                    "status": {"phase": "Pending"},
                }
            )
    return {"now": "2025-01-31T12:00:00Z", "groups": [group], "nodes": [], "pods": pods}


def _vector(cpu: int, mem: int, gpu: int) -> dict:
    return {"cpu": cpu, "memory": mem, "nvidia.com/gpu": gpu, "pods": 1}


def first_fit_decreasing(shapes) -> int:
    """Pod by pod: largest dominant share first (ties: shape order), each into the first node with room."""
    items = []
    for s, (count, cpu, mem, gpu) in enumerate(shapes):
        v = _vector(cpu, mem, gpu)
        size = max(v[r] / NODE[r] for r in v)
        items += [(-size, s, v)] * count
    items.sort(key=lambda t: (t[0], t[1]))
    nodes: list[dict] = []
    for _, _, v in items:
        for free in nodes:
            if all(free[r] >= q for r, q in v.items()):
                break
        else:
            free = dict(NODE)
            nodes.append(free)
        for r, q in v.items():
            free[r] -= q
    return len(nodes)


def lower_bound(shapes) -> int:
    total = {r: 0 for r in NODE}
    for count, cpu, mem, gpu in shapes:
        for r, q in _vector(cpu, mem, gpu).items():
            total[r] += q * count
    return max(math.ceil(total[r] / NODE[r]) for r in NODE)


def _new_nodes(shapes) -> int:
    result = plan(parse_snapshot(_snapshot(shapes)), CONFIG)
    assert not result.unschedulable
    return result.scale_up.get("g", 0)


shape = st.tuples(
    st.integers(1, 60),
    st.integers(1, 64).map(lambda x: x * 250),
    st.integers(1, 64).map(lambda x: x * 1024),
    st.sampled_from([0, 0, 1, 2, 3, 4, 8]),
)


@PROPERTIES
@given(st.lists(shape, min_size=1, max_size=8))
def test_never_more_than_first_fit_decreasing_and_never_below_the_bound(shapes) -> None:
    got = _new_nodes(shapes)
    assert lower_bound(shapes) <= got <= first_fit_decreasing(shapes)


@PROPERTIES
@given(shape.map(lambda s: (s[0] * 50,) + s[1:]))
def test_identical_pods_need_exactly_the_lower_bound(s) -> None:
    count, cpu, mem, gpu = s
    per_node = min(NODE[r] // q for r, q in _vector(cpu, mem, gpu).items() if q)
    assert _new_nodes([s]) == math.ceil(count / per_node)


@PROPERTIES
@given(st.lists(st.integers(0, 400), min_size=4, max_size=4))
def test_mixed_gpu_workloads_within_two_percent_of_the_lower_bound(counts) -> None:
    # 1, 2, 4 and 8-GPU jobs with CPU and memory in proportion (a V100 node: 8 GPUs, 16 CPUs, 64 GiB)
    shapes = [(n, 1500 * g, 6 * 1024 * g, g) for n, g in zip(counts, (1, 2, 4, 8), strict=True) if n]
    if not shapes:
        return
    bound = lower_bound(shapes)
    assert _new_nodes(shapes) <= bound * 1.02
