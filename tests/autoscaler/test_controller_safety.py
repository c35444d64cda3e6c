"""What the controller never does, whatever the snapshot says (issue 10): terminate the instance of a Node the parser
rejected, lower desired capacity below the live instances, advance the failure watermark past a region it could
not read, start a scale-down on a stale cache; and what it does instead (back a refused group off)."""

from __future__ import annotations

import json
from datetime import timedelta

from autoscaler.controller import STATE_FAILURES_READ, STATE_GROUPS
from tests.autoscaler.fakes import iso, node, pod
from tests.autoscaler.test_controller import T0, Clock, controller, gpu_pods, idle_gpu_world, sample, world


def test_a_node_the_parser_rejects_is_reported_and_its_instance_is_not_terminated():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    cluster.nodes["gpu-0"]["status"]["allocatable"]["example.com/fpga"] = "lots"  # a quantity it cannot read
    cluster.pods["research/train"] = pod("train", cpu="8", memory="64Gi", gpus=8, node="gpu-0", owner="Job")
    ctl = controller(cluster, cloud, clock)
    for _ in range(3):
        result = ctl.run_once()
        clock.advance(3600)  # long past the boot timeout and the idle threshold
    assert result.unparsed_nodes == ["gpu-0"] and sample("autoscaler_unparsed_nodes") == 1
    assert any("gpu-0" in e and "allocatable" in e for e in result.errors)
    assert iid not in {a.get("instance_id") for a in result.plan["scale_down"]}
    assert not [c for c in cloud.changes if c[0] == "terminate"] and "gpu-0" in cluster.nodes
    # The stand-in has no capacity, so the planner sees a node of a GPU group without its GPUs (unready); its
    # scale-down-disabled annotation keeps it whatever its state.
    assert result.plan["node_states"]["gpu-0"] in ("busy", "protected", "unready")


def test_an_empty_rejected_node_is_never_tainted_either():
    clock = Clock()
    cluster, cloud, _ = idle_gpu_world(clock)
    cluster.nodes["gpu-0"]["status"]["allocatable"]["example.com/fpga"] = "lots"
    ctl = controller(cluster, cloud, clock)
    for _ in range(3):
        ctl.run_once()
        clock.advance(3600)
    assert cluster.changes == [] or all(c[0] not in ("taint", "terminate") for c in cluster.changes)
    assert not [c for c in cloud.changes if c[0] == "terminate"]


def test_desired_is_never_lowered_below_the_live_instances():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    cloud.groups["c-us-west-2-v100"]["desired"] = 3
    cloud.add_instance("c-us-west-2-v100", iso(T0))
    plan = {"desired": {"c-us-west-2-v100": 0}}  # a plan that would let AWS choose which two instances die
    snapshot = {"pods": [], "nodes": cluster.list_nodes(), "groups": cloud.list_groups()}
    result = controller(cluster, cloud, clock).execute(plan, snapshot)
    assert cloud.changes == [("set_desired", "c-us-west-2-v100", 2)]
    assert any("below its 2 live instance(s)" in e for e in result.errors)


def test_the_failure_watermark_stays_while_a_region_cannot_be_read():
    clock = Clock()
    cluster, cloud = world(clock=clock)
    cluster.state[STATE_FAILURES_READ] = iso(T0 - timedelta(minutes=5))
    cloud.unread_regions = {"us-east-1"}  # the adapter could not read that region's activities
    result = controller(cluster, cloud, clock).run_once()
    assert cluster.state[STATE_FAILURES_READ] == iso(T0 - timedelta(minutes=5))
    assert result.aws_unread == ["us-east-1"] and sample("autoscaler_aws_unreadable_regions") == 1
    cloud.unread_regions = set()
    clock.advance(10)
    controller(cluster, cloud, clock).run_once()
    assert cluster.state[STATE_FAILURES_READ] == iso(clock.now())


def test_no_scale_down_starts_while_aws_cannot_be_read_or_a_cache_is_stale():
    clock = Clock()
    cluster, cloud, _ = idle_gpu_world(clock)
    ctl = controller(cluster, cloud, clock)
    ctl.run_once()
    clock.advance(601)
    cloud.unread_regions = {"us-east-1"}
    result = ctl.run_once()
    assert any(s["action"] == "taint" for s in result.plan["scale_down"])
    assert ("taint", "gpu-0") not in cluster.changes
    assert any("held, AWS could not be read in us-east-1" in e for e in result.errors)
    cloud.unread_regions = set()
    cluster.cache_ages = lambda: {"pods": 300.0, "nodes": 1.0}
    result = ctl.run_once()
    assert ("taint", "gpu-0") not in cluster.changes
    assert any("the pods cache is 300 s old" in e for e in result.errors)
    cluster.cache_ages = lambda: {"pods": 1.0, "nodes": 1.0}
    ctl.run_once()
    assert ("taint", "gpu-0") in cluster.changes


class Refused(Exception):
    permanent = True


def test_a_refused_scale_up_backs_that_group_off_and_spills_its_pods():
    clock = Clock()
    cluster, cloud = world(gpu_pods(2), clock=clock, cpu_nodes=0)
    cloud.fail["set_desired"] = [Refused("ValidationError: the launch template was deleted")]
    ctl = controller(cluster, cloud, clock)
    first = ctl.run_once()
    assert (
        first.plan["scale_up"] == {"c-us-west-2-v100": 2} and cloud.groups["c-us-west-2-v100"]["desired"] == 0
    )
    clock.advance(10)
    second = ctl.run_once()
    assert (
        second.plan["scale_up"] == {"c-us-east-1-v100": 2}
        and cloud.groups["c-us-east-1-v100"]["desired"] == 2
    )
    state = json.loads(cluster.state[STATE_GROUPS])["c-us-west-2-v100"]
    assert state["failures"] == 1 and "ValidationError" in state["last_failure"]["message"]
    assert sample("autoscaler_group_backoff", group="c-us-west-2-v100") == 1


def test_the_notready_node_of_an_instance_that_left_its_group_does_not_count():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    g = cloud.groups["c-us-west-2-v100"]
    cluster.pods["research/train"] = pod("train", cpu="8", memory="64Gi", gpus=8, node="gpu-0", owner="Job")
    gone = cloud.add_instance(g["name"], iso(T0 - timedelta(hours=1)))
    cluster.nodes["gpu-1"] = node("gpu-1", g, gone, created=T0 - timedelta(hours=1))
    cluster.nodes["gpu-1"]["status"]["conditions"][0]["status"] = "False"
    g["instances"] = [i for i in g["instances"] if i["id"] != gone]  # terminated from outside: left the group
    g["desired"] = 3  # one more was asked for, and failed for lack of capacity
    cloud.failures.append({"group": g["name"], "reason": "insufficient-capacity", "missing": 1,
                           "message": "We currently do not have sufficient p3.16xlarge capacity",
                           "at": iso(T0 - timedelta(seconds=5))})  # fmt: skip
    cluster.pods["research/next"] = gpu_pods(1)[0]
    result = controller(cluster, cloud, clock).run_once()
    assert "gpu-1" not in result.plan["node_states"]
    assert g["desired"] == 1, "desired follows the one instance that exists"
    assert result.plan["scale_up"] == {"c-us-east-1-v100": 1}, result.plan
