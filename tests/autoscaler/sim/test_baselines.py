"""Each baseline behaviour the issue names, pinned step by step on a scripted cluster (tests/.../fakes.py).

cluster-autoscaler: clusterstate restarts the provisioning clock at every increase (RegisterOrUpdateScaleUp),
unneeded-node timers run on during the scale-down cooldown, the AWS provider's failed scaling activities end a
scale-up at the next refresh, and safe-to-evict=false keeps a node. AWS target tracking: proportional
arithmetic, 3 high and 15 low one-minute datapoints, warm-up, scale-in protection."""

from __future__ import annotations

from autoscaler.sim.policies.ca_like import SAFE_TO_EVICT, CaLikePolicy, CaProtectedPolicy
from autoscaler.sim.policies.target import TargetTrackingPolicy, desired_after
from tests.autoscaler.sim.fakes import T4_WEST, V100_EAST, V100_WEST, Harness, group, iso, node, pod


def _ca(policy=CaLikePolicy, **west) -> Harness:
    return Harness(policy, group(V100_WEST, **west), group(V100_EAST))


# --- cluster-autoscaler ------------------------------------------------------------------------------------
def test_ca_restarts_the_provisioning_clock_at_each_increase():
    h = _ca()
    h.cluster.pods.append(pod("a", 8))
    assert h.at(0) == [(0, "set_desired", V100_WEST, 1)]
    h.cluster.pods.append(pod("b", 8))  # more demand while the first node is still on its way
    assert h.at(600) == [(600, "set_desired", V100_WEST, 2)]
    assert h.at(1000) == [], "900 s after the first increase but only 400 s after the last: still waiting"
    assert h.at(1490) == []
    assert (1500, "set_desired", V100_WEST, 0) in h.at(1500), "15 minutes after the last increase: give up"


def test_ca_keeps_unneeded_timers_through_the_cooldown_after_a_scale_up():
    h = _ca(desired=2)
    h.cloud.groups[V100_WEST]["instances"] = [
        {"id": "i-1", "state": "InService"},
        {"id": "i-2", "state": "InService"},
    ]
    h.cluster.nodes += [node("n1", V100_WEST, "i-1"), node("n2", V100_WEST, "i-2")]
    h.cluster.pods += [pod("small", 1, "n1"), pod("big", 6, "n2")]  # n1 is 1/8 used; its pod fits on n2
    assert h.at(0) == []  # n1 unneeded from now
    h.cluster.pods.append(pod("new", 8))
    assert h.at(300) == [(300, "set_desired", V100_WEST, 3)]  # a scale-up: cooldown until 900
    assert h.at(400) == [] and h.cluster.evicted == []  # in cooldown: no removal, the timer runs on
    h.at(900)
    assert h.cluster.evicted == [(900, "small")], "unneeded since 0: drained as soon as the cooldown ends"


def test_ca_reads_a_failed_scaling_activity_and_moves_on_at_the_next_refresh():
    h = _ca()
    h.cluster.pods.append(pod("a", 8))
    assert h.at(0) == [(0, "set_desired", V100_WEST, 1)]
    h.cloud.failures.append({"group": V100_WEST, "at": 5.0, "reason": "insufficient-capacity"})
    assert h.at(30) == [], "the group cache refreshes once a minute"
    calls = h.at(60)
    assert calls[0] == (60, "set_desired", V100_WEST, 0), "placeholders unfulfillable: given up at once"
    assert (60, "set_desired", V100_EAST, 1) in calls, "the group is backed off: the next one takes the pod"


def test_ca_without_a_failure_waits_out_max_node_provision_time():
    h = _ca()
    h.cluster.pods.append(pod("a", 8))
    h.at(0)
    for t in range(60, 900, 60):
        assert h.at(t) == [], t
    assert h.at(900)[0] == (900, "set_desired", V100_WEST, 0)


def test_ca_never_drains_a_node_whose_pods_are_not_safe_to_evict():
    protect = {SAFE_TO_EVICT: "false"}
    for policy, evicted in ((CaLikePolicy, [(700, "small")]), (CaProtectedPolicy, [])):
        h = _ca(policy, desired=3)
        h.cloud.groups[V100_WEST]["instances"] = [{"id": f"i-{i}", "state": "InService"} for i in (1, 2, 3)]
        h.cluster.nodes += [node(f"n{i}", V100_WEST, f"i-{i}") for i in (1, 2, 3)]
        notes = policy.pod_annotations  # what the runner puts on the workload's pods for this policy
        h.cluster.pods += [pod("small", 1, "n1", notes), pod("big", 6, "n2", notes)]  # n3 is empty
        h.at(0)
        calls = h.at(700)
        assert (700, "terminate", V100_WEST, "i-3") in calls, policy.name  # empty nodes go either way
        h.at(1400)
        assert h.cluster.evicted == evicted, policy.name
    assert CaLikePolicy.pod_annotations == {} and CaProtectedPolicy.pod_annotations == protect


# --- AWS target tracking -----------------------------------------------------------------------------------
def test_target_tracking_capacity_is_proportional_to_metric_over_target():
    assert desired_after(4, 1.35, 0.9) == 6  # 4 x 1.5
    assert desired_after(10, 0.5, 0.9) == 6  # ceil(5.56)
    assert desired_after(3, 0.9, 0.9) == 3  # at the target: unchanged


def _tt(t4_nodes: int, busy: int, launched: float = -3600.0, **kw) -> Harness:
    h = Harness(
        TargetTrackingPolicy, group(T4_WEST, desired=t4_nodes, gpus=1, max=40, **kw), group(V100_WEST)
    )
    g = h.cloud.groups[T4_WEST]
    g["instances"] = [
        {"id": f"i-{i}", "state": "InService", "launched_at": iso(launched)} for i in range(t4_nodes)
    ]
    h.cluster.nodes += [node(f"t{i}", T4_WEST, f"i-{i}", gpus=1) for i in range(t4_nodes)]
    h.cluster.pods += [pod(f"run{i}", 1, f"t{i}") for i in range(busy)]
    return h


def test_target_tracking_scales_out_after_three_minutes_above_target():
    h = _tt(2, busy=2)
    h.cluster.pods += [pod(f"p{i}", 1) for i in range(3)]  # 5 GPUs wanted on 2: metric 2.5
    for t in (0, 60, 120):
        assert [c for c in h.at(t) if c[1] == "set_desired"] == [], t
    assert (180, "set_desired", T4_WEST, 6) in h.at(180)  # ceil(2 x 2.5 / 0.9)


def test_target_tracking_leaves_warming_instances_out_of_the_current_capacity():
    h = _tt(4, busy=2, launched=-3600.0)
    h.cloud.groups[T4_WEST]["instances"][2]["launched_at"] = iso(0.0)  # two launched just now: warming up
    h.cloud.groups[T4_WEST]["instances"][3]["launched_at"] = iso(0.0)
    h.cluster.pods += [pod(f"p{i}", 1) for i in range(8)]  # 2 running + 8 pending on 4 nodes: metric 2.5
    for t in (0, 60, 120):
        h.at(t)
    assert (180, "set_desired", T4_WEST, 6) in h.at(180)  # 2 ready instances x 2.5 / 0.9, not 4 x


def test_target_tracking_scales_in_after_fifteen_low_minutes_and_only_idle_instances():
    h = _tt(6, busy=2)  # metric 2/6: below 90% of the target
    for t in range(0, 900, 60):
        assert [c for c in h.at(t) if c[1] == "terminate"] == [], t
    calls = h.at(900)
    gone = {c[3] for c in calls if c[1] == "terminate"}
    assert gone == {"i-2", "i-3", "i-4"}, "desired ceil(6 x 2/6 / 0.9) = 3: three idle ones go, the busy stay"
    assert (0, "protect", T4_WEST, 2) in h.cloud.calls  # the two busy instances are protected


def test_target_tracking_does_not_scale_in_while_an_instance_warms_up():
    h = _tt(6, busy=2)
    h.cloud.groups[T4_WEST]["instances"][5]["launched_at"] = iso(700.0)
    for t in range(0, 960, 60):
        assert [c for c in h.at(t) if c[1] == "terminate"] == [], t
    assert {c[3] for c in h.at(1000) if c[1] == "terminate"}, "warm-up over (700 + 300): the scale-in happens"
