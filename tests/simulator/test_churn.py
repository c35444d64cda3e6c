"""Pods that vanish (issue 38): 2,000 one-GPU pods deleted 2 s after creation leave nothing bought after a minute.

Ours is the real controller and planner over the cluster model: what it bought for the pods is cancelled before
it registers (terminated with a decrement, each instance checked by a fresh read of the Nodes first); only the
spec's warm pools (one T4 node per region) and spare GPUs (8 T4 nodes, bought while the pods were pending: they are
kept for the next jobs and go with the other empty nodes at the idle threshold) stay.
"""

from __future__ import annotations

import pytest

from clusterspec.loader import load_spec
from simulator.scenarios import CHURN_PODS, churn_scenario
from simulator.simulate import run_policy


@pytest.fixture(scope="module")
def churn():
    spec = load_spec()
    return spec, run_policy(churn_scenario(), spec, "batch")


def _warm_pool_gpus(spec) -> int:
    """The GPUs of the warm pools and of the spare, which the plan keeps whatever the pods."""
    pools = sum(g.warm_pool * g.gpus for r in spec.regions for g in r.node_groups if g.warm_pool)
    return pools + spec.autoscaler.spare_gpus


def test_the_scenario_deletes_every_pod_before_it_runs(churn):
    _, record = churn
    assert record.pods == CHURN_PODS and record.pods_never_ran == CHURN_PODS


def test_ours_bought_for_the_pods_then_cancelled_it_within_a_minute(churn):
    spec, record = churn
    warm = _warm_pool_gpus(spec)
    assert max(s.provisioned_gpus for s in record.samples) > 100 * warm  # it did buy for the burst
    after = [s for s in record.samples if s.t >= 60]
    assert after and all(s.provisioned_gpus <= warm for s in after)
    lowered = [e for e in record.scale_events if e["to"] < e["from"]]
    assert lowered and max(e["t"] for e in lowered) < 60


def test_nothing_is_killed_and_nothing_is_left_but_the_warm_pools_and_the_spare(churn):
    _, record = churn
    assert sum(o.kills for o in record.jobs.values()) == 0
    assert record.samples[-1].provisioned_gpus <= _warm_pool_gpus(load_spec())
