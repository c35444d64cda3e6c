"""Distributed jobs without gang scheduling start at their last worker (rendezvous); the lower bound on cost."""

from __future__ import annotations

import pytest

from clusterspec.catalog import instance_types
from clusterspec.loader import load_spec
from clusterspec.scheduler import DEFAULT
from simulator.bounds import lower_bound
from simulator.model import DURATION_ANNOTATION, ClusterModel, VirtualClock
from simulator.rendezvous import Rendezvous
from simulator.traces import Job
from simulator.workload import job_pods
from tests.simulator.model.builders import group


def test_workers_bound_one_by_one_hold_their_gpus_and_all_end_duration_after_the_last_started():
    m = ClusterModel(VirtualClock(start=0.0), [group(desired=2)], boot_delays={"p3": 100})
    m.scheduler.profile = DEFAULT
    sizes = {"job-1": 3}
    m.subscribe(Rendezvous(m, sizes))
    for p in job_pods(Job("job-1", 0, 24, 500), 8, DURATION_ANNOTATION, gangs=False):
        m.submit_pod(p)
    phases = sorted(p["status"]["phase"] for p in m.pods() if p["metadata"]["namespace"] == "research")
    assert phases == ["Pending", "Running", "Running"]  # two workers wait at the rendezvous on their GPUs
    m.cloud.set_desired("g8", 3)
    while (t := m.next_event_time()) is not None and t <= 2000:
        m.advance(t)
    pods = [p for p in m.pods() if p["metadata"]["namespace"] == "research"]
    assert {p["status"]["phase"] for p in pods} == {"Succeeded"}
    records = [m.records[p["metadata"]["uid"]] for p in pods]
    last = max(r.started for r in records)
    assert last >= 100 and {r.finished for r in records} == {last + 500}


def test_the_lower_bound_prices_each_pod_on_the_cheapest_gpus_that_can_hold_it():
    spec = load_spec()
    types = instance_types()
    t4 = types["g4dn.xlarge"].price_in("us-west-2")
    v100 = types["p3.16xlarge"].price_in("us-west-2") / 8
    jobs = [Job("a", 0, 1, 3600), Job("b", 0, 2, 1800), Job("c", 0, 16, 3600)]
    bound = lower_bound(jobs, spec, 8)
    assert bound["useful_gpu_hours"] == 1 + 1 + 16
    assert bound["gpu_cost_usd"] == pytest.approx(1 * t4 + 1 * v100 + 16 * v100, abs=0.01)
    cpu = sum(
        types["m6i.2xlarge"].price_in(r) for r in spec.spill_over_order
    )  # each region's CPU group min 1
    assert bound["cpu_floor_usd"] == pytest.approx(cpu * 1.0, abs=0.01)  # the trace spans an hour
    assert bound["cost_usd"] == pytest.approx(bound["gpu_cost_usd"] + bound["cpu_floor_usd"], abs=0.01)
