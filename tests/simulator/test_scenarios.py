"""The burst story: 1, 60, then 1,600 GPUs, with InsufficientInstanceCapacity in the first region."""

from __future__ import annotations

import pytest

from clusterspec.loader import load_spec
from simulator.metrics import burst_to_running_s, loops_to_request, summarize
from simulator.scenarios import burst_scenario
from simulator.simulate import run_policy


@pytest.fixture(scope="module")
def burst():
    spec = load_spec()
    scenario = burst_scenario(spec)
    return spec, scenario, {p: run_policy(scenario, spec, p) for p in ("batch", "ca-ideal")}


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


def test_ca_like_reads_the_failed_activity_and_gives_up_on_the_group_within_a_refresh(burst):
    """cloudprovider/aws isNodeGroupAvailable: a Failed scaling activity since the group's last update marks its
    placeholders unfulfillable at the next cache refresh (once a minute), long before max-node-provision-time."""
    _, scenario, records = burst
    big = scenario.bursts[-1]
    ca = records["ca-ideal"]
    west = "dlr-us-west-2-gpu-v100x8"
    ups = [e for e in ca.scale_events if e["group"] == west and e["t"] >= big.start_s and e["to"] > e["from"]]
    downs = [
        e for e in ca.scale_events if e["group"] == west and e["t"] > ups[0]["t"] and e["to"] < e["from"]
    ]
    assert downs and downs[0]["t"] - ups[0]["t"] <= 60 + 10  # a refresh (60 s) and a scan interval
    assert downs[0]["t"] - ups[0]["t"] < 15 * 60
    theirs = burst_to_running_s(ca, big)
    assert theirs < 15 * 60
    # one node group per loop against all of them in one pass
    assert loops_to_request(records["ca-ideal"], big) > loops_to_request(records["batch"], big)
