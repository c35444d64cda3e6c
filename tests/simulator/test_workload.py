from __future__ import annotations

import pytest

from provision import scheduler
from simulator.model.pods import DURATION_ANNOTATION, distributed_key, gang_key
from simulator.traces import Job, load_trace
from simulator.workload import (
    CPU_PER_GPU,
    GANG_SCHEDULER,
    MEMORY_GIB_PER_GPU,
    RENDEZVOUS_ANNOTATION,
    job_pods,
    peak_gpu_demand,
    split_job,
)
from tests.support import ROOT


@pytest.mark.parametrize(
    ("gpus", "per_node", "expect"),
    [(1, 8, [1]), (8, 8, [8]), (16, 8, [8, 8]), (20, 8, [8, 8, 4]), (3, 1, [1, 1, 1])],
)
def test_jobs_split_into_pods_of_up_to_a_node(gpus, per_node, expect):
    shapes = split_job(Job("j", 0, gpus, 10), per_node)
    assert [s.gpus for s in shapes] == expect
    assert [s.cpu_m for s in shapes] == [g * CPU_PER_GPU * 1000 for g in expect]
    assert [s.memory_mi for s in shapes] == [g * MEMORY_GIB_PER_GPU * 1024 for g in expect]


def test_trace_cpu_and_memory_are_split_by_gpu_share():
    shapes = split_job(Job("j", 0, 12, 10, cpus=24, memory_gib=96), 8)
    assert [(s.cpu_m, s.memory_mi) for s in shapes] == [(16000, 64 * 1024), (8000, 32 * 1024)]


def test_multi_node_job_is_a_declared_pod_group_for_the_gang_scheduler():
    pods = job_pods(Job("job-7", 0, 16, 300), 8, DURATION_ANNOTATION)
    assert [p["metadata"]["name"] for p in pods] == ["job-7-0", "job-7-1"]
    assert {gang_key(p) for p in pods} == {("pod-group", "research", "job-7")}
    assert all(p["metadata"]["annotations"]["research.cluster/pod-group-size"] == "2" for p in pods)
    assert {p["spec"]["schedulerName"] for p in pods} == {GANG_SCHEDULER} == {scheduler.GANG_SCHEDULER}
    assert all(p["metadata"]["annotations"][DURATION_ANNOTATION] == "300" for p in pods)
    req = pods[0]["spec"]["containers"][0]["resources"]["requests"]
    assert req == {"cpu": "24000m", "memory": "98304Mi", "nvidia.com/gpu": "8"}


def test_without_coscheduling_a_multi_node_job_is_an_indexed_job_that_waits_at_its_rendezvous():
    pods = job_pods(Job("job-7", 0, 16, 300), 8, DURATION_ANNOTATION, gangs=False)
    assert {gang_key(p) for p in pods} == {None}  # no declared gang: the scheduler places them one by one
    assert {distributed_key(p) for p in pods} == {
        ("job", "research", "job-7")
    }  # the model kills them together
    assert all("schedulerName" not in p["spec"] for p in pods)
    assert all(DURATION_ANNOTATION not in p["metadata"]["annotations"] for p in pods)
    assert all(p["metadata"]["annotations"][RENDEZVOUS_ANNOTATION] == "300" for p in pods)


def test_policy_annotations_go_on_every_pod():
    pods = job_pods(Job("j", 0, 16, 60), 8, DURATION_ANNOTATION, annotations={"a": "b"})
    assert all(p["metadata"]["annotations"]["a"] == "b" for p in pods)


def test_single_pod_job_is_not_a_gang():
    (pod,) = job_pods(Job("job-1", 0, 1, 60), 8, DURATION_ANNOTATION)
    assert gang_key(pod) is None
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_peak_demand_of_the_small_trace():
    jobs = load_trace(ROOT / "tests/simulator/small_trace.csv")
    # by hand: at t=120 jobs of 1+1+2+8+16+1 GPUs run (the first ends at 600)
    assert peak_gpu_demand(jobs) == 29


def test_a_job_ending_as_another_starts_does_not_count_twice():
    assert peak_gpu_demand([Job("a", 0, 4, 10), Job("b", 10, 4, 10)]) == 4
