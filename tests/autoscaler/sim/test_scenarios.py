"""The burst story: 1, 60, then 1,600 GPUs, with InsufficientInstanceCapacity in the first region."""

from __future__ import annotations

import pytest

from autoscaler.sim.metrics import burst_to_running_s, loops_to_request, summarize
from autoscaler.sim.scenarios import burst_scenario
from autoscaler.sim.simulate import run_policy
from provision.loader import load_spec


@pytest.fixture(scope="module")
def burst():
    spec = load_spec()
    scenario = burst_scenario(spec)
    return spec, scenario, {p: run_policy(scenario, spec, p) for p in ("batch", "ca-like")}


def test_the_story_asks_for_1_then_60_then_1600_gpus(burst):
    _, scenario, _ = burst
    assert [b.gpus for b in scenario.bursts] == [1, 60, 1600]
    assert [sum(j.gpus for j in scenario.jobs if j.id in b.job_ids) for b in scenario.bursts] == [1, 60, 1600]
    assert scenario.capacity_events[0][1:3] == ("us-west-2", "p3.16xlarge")


def test_ours_spills_over_and_runs_the_whole_burst_without_killing(burst):
    spec, scenario, records = burst
    ours = records["batch"]
    figures = summarize(ours, scenario.bursts)
    assert figures["jobs_finished"] == len(scenario.jobs) and figures["jobs_killed"] == 0
    big = scenario.bursts[-1]
    east = max(s.capacity_by_region[1] for s in ours.samples if s.t >= big.start_s)
    assert east > 0  # us-east-1 took part of the burst
    regions = {e["region"] for e in ours.scale_events if e["t"] >= big.start_s and e["to"] > e["from"]}
    assert {"us-west-2", "us-east-1"} <= regions
    assert loops_to_request(ours, big) <= 1


def test_ca_like_waits_on_the_group_that_has_no_capacity(burst):
    _, scenario, records = burst
    big = scenario.bursts[-1]
    ours = burst_to_running_s(records["batch"], big)
    theirs = burst_to_running_s(records["ca-like"], big)
    assert theirs >= 15 * 60  # max-node-provision-time before it gives up on us-west-2
    assert ours < theirs
    # one node group per loop against all of them in one pass
    assert loops_to_request(records["ca-like"], big) > loops_to_request(records["batch"], big)
