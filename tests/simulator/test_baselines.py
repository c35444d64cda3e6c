"""Each baseline behaviour the issue names, pinned step by step on a scripted cluster (tests/.../fakes.py).

cluster-autoscaler: clusterstate restarts the provisioning clock at every increase (RegisterOrUpdateScaleUp),
unneeded-node timers run on during the scale-down cooldown, the AWS provider's failed scaling activities end a
scale-up at the next refresh, and safe-to-evict=false keeps a node; as deployed on AWS (issue 27), one process
per region each buys for every pending pod, one in the primary region never uses the others, all-new GPU pods
wait 30 s, the group cache is read once a minute, giving up is one call per node, and a node still starting (or
not advertising its GPUs) is counted as upcoming. AWS target tracking: proportional
arithmetic, 3 high and 15 low one-minute datapoints, warm-up, scale-in protection."""

from __future__ import annotations

from dataclasses import replace

from simulator.policies.ca_like import (
    SAFE_TO_EVICT,
    CaIdealPolicy,
    CaIdealProtectedPolicy,
    CaPrimaryPolicy,
    CaRegionalPolicy,
    CaSettings,
)
from simulator.policies.target import TargetTrackingPolicy, desired_after
from tests.simulator.fakes import T4_WEST, V100_EAST, V100_WEST, Harness, group, iso, node, pod

V100_EAST2 = "dlr-us-east-2-gpu-v100x8"


def _ca(policy=CaIdealPolicy, **west) -> Harness:
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
    for policy, evicted in ((CaIdealPolicy, [(700, "small")]), (CaIdealProtectedPolicy, [])):
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
    assert CaIdealPolicy.pod_annotations == {} and CaIdealProtectedPolicy.pod_annotations == protect


def test_ca_per_region_each_process_buys_for_every_pending_pod():
    h = Harness(CaRegionalPolicy, group(V100_WEST), group(V100_EAST), group(V100_EAST2))
    h.cluster.pods.append(pod("a", 8))
    calls = h.at(0)
    assert sorted(calls) == [
        (0, "set_desired", V100_EAST, 1),
        (0, "set_desired", V100_EAST2, 1),
        (0, "set_desired", V100_WEST, 1),
    ], "none sees the nodes the others requested: three nodes for one pod"
    assert sorted(r for _, r in h.cloud.reads) == [("us-east-1",), ("us-east-2",), ("us-west-2",)]
    assert h.at(10) == [], "each counts its own request as upcoming"
    h.cluster.nodes.append(node("w1", V100_WEST, "i-1"))
    h.cluster.pods[0] = pod("a", 8, "w1")  # the scheduler bound the pod to the first node up
    h.cluster.pods.append(pod("b", 8))
    assert h.at(20) == [(20, "set_desired", V100_WEST, 2)], (
        "the west process buys again for b: the east nodes on the way are not its own (each east process counts"
        " its own node on the way for b)"
    )


def test_ca_in_the_primary_region_never_uses_the_others():
    h = Harness(CaPrimaryPolicy, group(V100_WEST, max=1, desired=1), group(V100_EAST))
    h.cloud.groups[V100_WEST]["instances"] = [{"id": "i-1", "state": "InService"}]
    h.cluster.nodes.append(node("w1", V100_WEST, "i-1"))
    h.cluster.pods += [pod("a", 8, "w1"), pod("b", 8)]
    for t in range(0, 3600, 60):
        assert h.at(t) == [], f"{t}: us-west-2 is at its max; the process has no other region"
    assert {r for _, r in h.cloud.reads} == {("us-west-2",)}
    ideal = Harness(CaIdealPolicy, group(V100_WEST, max=1, desired=1), group(V100_EAST))
    ideal.cloud.groups[V100_WEST]["instances"] = [{"id": "i-1", "state": "InService"}]
    ideal.cluster.nodes.append(node("w1", V100_WEST, "i-1"))
    ideal.cluster.pods += [pod("a", 8, "w1"), pod("b", 8)]
    assert ideal.at(0) == [(0, "set_desired", V100_EAST, 1)], "the idealised bound spills over"


def test_ca_waits_30_s_before_scaling_up_for_all_new_gpu_pods():
    h = _ca()
    h.cluster.pods.append(pod("a", 8, created=100.0))
    for t in (100, 110, 120, 129):
        assert h.at(t) == [], f"{t}: the oldest GPU pod is under 30 s old"
    assert h.policy.next_wakeup() == 130.0, "the runner is asked back when the wait ends"
    assert h.at(130) == [(130, "set_desired", V100_WEST, 1)]
    h = _ca()  # an older pod among them: no wait
    h.cluster.pods += [pod("old", 8, created=0.0), pod("new", 8, created=100.0)]
    assert h.at(100) == [(100, "set_desired", V100_WEST, 2)]


def test_ca_without_gpu_pods_waits_only_2_s():
    cpu = {**pod("c", 0, created=100.0)}
    cpu["spec"]["containers"][0]["resources"]["requests"].pop("nvidia.com/gpu")
    h = _ca()
    h.cluster.pods.append(cpu)
    assert h.at(101) == []
    assert [c for c in h.at(102) if c[1] == "set_desired"], "2 s (unschedulablePodTimeBuffer): it scales"


def test_ca_reads_its_group_cache_once_a_minute():
    h = _ca(desired=0)
    for t in range(0, 60, 10):
        h.at(t)
    assert [t for t, _ in h.cloud.reads] == [0]
    h.cloud.groups[V100_WEST]["min"] = 2  # changed in AWS: CA sees it at its next refresh only
    h.at(60)
    assert [t for t, _ in h.cloud.reads] == [0, 60]


def test_ca_gives_up_with_one_call_per_node():
    h = _ca()
    h.cluster.pods += [pod(f"p{i}", 8) for i in range(4)]
    assert h.at(0) == [(0, "set_desired", V100_WEST, 4)]
    h.cloud.groups[V100_WEST]["instances"] = [{"id": "i-1", "state": "Pending"}]  # 1 of 4 launched
    h.cloud.failures.append({"group": V100_WEST, "at": 5.0, "reason": "insufficient-capacity"})
    calls = [c for c in h.at(60) if c[2] == V100_WEST]
    assert calls == [(60, "set_desired", V100_WEST, n) for n in (3, 2, 1)], "one per placeholder (CA 1.30)"
    once = Harness(
        lambda ctx: CaIdealPolicy(ctx, replace(CaSettings(), per_node_corrections=False)),
        group(V100_WEST),
        group(V100_EAST),
    )
    once.cluster.pods += [pod(f"p{i}", 8) for i in range(4)]
    once.at(0)
    once.cloud.groups[V100_WEST]["instances"] = [{"id": "i-1", "state": "Pending"}]
    once.cloud.failures.append({"group": V100_WEST, "at": 5.0, "reason": "insufficient-capacity"})
    assert [c for c in once.at(60) if c[2] == V100_WEST] == [(60, "set_desired", V100_WEST, 1)]


def test_ca_counts_a_node_still_starting_as_upcoming():
    for ready, advertised, label, rebuys in (
        (False, False, True, False),  # NotReady, registered 1 min ago: NotStarted, upcoming
        (True, False, True, False),  # Ready without its GPUs, GPU label: unready resources, upcoming
        (
            True,
            False,
            False,
            True,
        ),  # no GPU label: a Ready node with no GPU; the pod fits nowhere: buys again
        (True, True, True, False),
    ):
        settings = replace(CaSettings(), gpu_label=label)
        h = Harness(
            lambda ctx, s=settings: CaIdealPolicy(ctx, s), group(V100_WEST, desired=1), group(V100_EAST)
        )
        h.cloud.groups[V100_WEST]["instances"] = [{"id": "i-1", "state": "InService"}]
        h.cluster.nodes.append(
            node("w1", V100_WEST, "i-1", ready=ready, advertised=advertised, created=540.0)
        )
        h.cluster.pods.append(pod("a", 8))
        assert bool(h.at(600)) == rebuys, (ready, advertised, label)


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
