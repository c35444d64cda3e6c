"""The simulator's Karpenter (policies/karpenter_like.py) on the demo's 60-GPU wave with us-west-2 short of V100
and A100: the primary region's Karpenter cannot spill over and leaves pods pending; the idealised one over every
region's zones runs them all, with every pool provisioned in one pass (no 30-s GPU wait, no group per loop)."""

from __future__ import annotations

import pytest

from clusterspec.loader import load_spec
from simulator.metrics import Burst, burst_to_running_s
from simulator.runner import Scenario
from simulator.scenarios import demo_capacity, demo_jobs
from simulator.simulate import run_policy
from simulator.traces import Job
from tests.support import ROOT


@pytest.fixture(scope="module")
def spec():
    return load_spec(str(ROOT / "cluster.yaml"))


@pytest.fixture(scope="module")
def wave(spec):
    jobs = [Job(j.id, 0, j.gpus, j.duration_s) for j in demo_jobs()[1]]
    return Scenario("wave", "60 GPUs", jobs, capacity=demo_capacity(spec),
                    bursts=[Burst(0.0, tuple(j.id for j in jobs), 60)], horizon_s=4000.0)  # fmt: skip


def test_the_primary_regions_karpenter_leaves_pods_the_region_has_no_room_for(spec, wave) -> None:
    record = run_policy(wave, spec, "karpenter-primary")
    assert record.pods_never_ran > 0
    assert record.pods_never_ran < record.pods  # the T4 pods and two V100 nodes' worth ran


def test_the_idealised_karpenter_runs_every_pod_by_spilling_over(spec, wave) -> None:
    record = run_policy(wave, spec, "karpenter-ideal")
    assert record.pods_never_ran == 0
    ca = run_policy(wave, spec, "ca-ideal")
    assert ca.pods_never_ran == 0
    # every pool in one pass, no 30-s wait for GPU pods: all Running before cluster-autoscaler's one group per loop
    burst = wave.bursts[0]
    assert burst_to_running_s(record, burst) < burst_to_running_s(ca, burst)


def test_a_node_whose_gpus_are_not_advertised_yet_is_not_consolidated(spec) -> None:
    """The 320-GPU sweep: a p3.16xlarge is Ready some seconds before its device plugin advertises the GPUs, and
    empty then. Karpenter disrupts only initialized nodes (the extended resources registered), so it keeps them
    and binds the pods there: the real Karpenter's 40 nodes (bench-peers), not a buy and consolidate cycle."""
    jobs = [Job(j.id, 0, j.gpus, 8 * 3600) for j in demo_jobs()[2]]
    sweep = Scenario("sweep", "320 GPUs", jobs, capacity=demo_capacity(spec),
                     bursts=[Burst(0.0, tuple(j.id for j in jobs), 320)], horizon_s=4000.0)  # fmt: skip
    record = run_policy(sweep, spec, "karpenter-ideal")
    assert record.pods_never_ran == 0
    assert record.nodes_bought == 40  # 2 V100 nodes in us-west-2, 38 in us-east-1, one per 8-GPU pod
