"""The model's scheduler scores as kube-scheduler does under the deployed profile (MostAllocated, GPUs first,
gangs whole) and under the default one (LeastAllocated + BalancedAllocation, no gangs)."""

from __future__ import annotations

from clusterspec.scheduler import BIN_PACKING, DEFAULT
from simulator.model.scheduler import Scheduler
from tests.simulator.model.builders import gang, group, model, phases, pod


def _with(profile, *groups):
    m = model(*groups)
    m.scheduler.profile = profile
    return m


def _node_of(m, name: str) -> str:
    return m.pod("research", name)["spec"]["nodeName"]


def test_the_deployed_profile_puts_a_pod_on_the_node_whose_gpus_are_most_used():
    m = _with(BIN_PACKING, group(desired=3))
    m.submit_pod(pod("four", gpus=4, duration=None))
    m.submit_pod(pod("six", gpus=6, duration=None))  # does not fit next to "four": another node
    m.submit_pod(pod("one", gpus=1, duration=None))  # 7/8 GPUs used beats 5/8
    assert _node_of(m, "one") == _node_of(m, "six") != _node_of(m, "four")


def test_the_default_profile_spreads_by_cpu_and_memory():
    m = _with(DEFAULT, group(desired=3))
    m.submit_pod(pod("a", gpus=1, duration=None))
    m.submit_pod(pod("b", gpus=1, duration=None))
    m.submit_pod(pod("c", gpus=1, duration=None))
    assert len({_node_of(m, n) for n in "abc"}) == 3, "LeastAllocated sends each pod to an empty node"


def test_without_coscheduling_a_gang_binds_pod_by_pod():
    m = _with(DEFAULT, group(desired=2))
    for p in gang("big", 3):
        m.submit_pod(p)
    assert sorted(phases(m).values()) == ["Pending", "Running", "Running"], "two of three hold their nodes"


def test_with_coscheduling_the_same_gang_waits_whole():
    m = _with(BIN_PACKING, group(desired=2))
    for p in gang("big", 3):
        m.submit_pod(p)
    assert set(phases(m).values()) == {"Pending"}


def test_the_default_profile_searches_an_adaptive_share_of_large_clusters():
    s = Scheduler(lambda p, n: None, lambda p, w: None, profile=DEFAULT)
    s.nodes = dict.fromkeys(range(99))
    assert s._feasible_to_find() is None  # fewer than 100 nodes: all of them
    s.nodes = dict.fromkeys(range(1000))
    assert s._feasible_to_find() == 1000 * (50 - 1000 // 125) // 100  # 42%: 420 nodes
    s.nodes = dict.fromkeys(range(10000))
    assert s._feasible_to_find() == 500  # at least 5%
    s.profile = BIN_PACKING
    assert s._feasible_to_find() is None  # percentageOfNodesToScore: 100


def test_ties_are_broken_at_random_but_reproducibly():
    picks = []
    for _ in range(2):
        m = _with(BIN_PACKING, group(desired=4))
        m.submit_pod(pod("x", gpus=8, duration=None))
        picks.append(_node_of(m, "x"))
    assert picks[0] == picks[1]
