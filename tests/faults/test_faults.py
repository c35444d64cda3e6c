"""The faults of issue 10, each against the real ``autoscaler run`` process(es) on the real control plane, checked
with kubectl, the cluster admin's API client and boto3.

Every scenario ends by checking the invariants the world's sampler watched all along: desired capacity never above
a group's maximum nor below the instances it has.
"""

from __future__ import annotations

import time

import pytest

from tests.faults.harness import kubectl, wait_until

CPU = "dlr-us-west-2-cpu"
WEST = "dlr-us-west-2-gpu-v100x8"
EAST = "dlr-us-east-1-gpu-v100x8"
# A quantity kube-apiserver stores (an extended resource's value is a whole number, and its grammar has no upper
# bound) and the planner's parser refuses (beyond an int64, as Kubernetes' Value() reads it): a Node or a pod the
# planner cannot read, as a newer API's field or a parser bug would make one.
UNREADABLE = {"example.com/fpga": "10E"}


def _gpu_pod(world, name: str) -> None:
    """A Job of one 8-GPU pod (v100), made by the Job controller and pending: the autoscaler's to buy for."""
    world.gpu_pod(name)


def _job_lands_after_the_taint(world, node: str, name: str) -> None:
    """The moment the autoscaler taints the idle node, a Job's pod is bound to it (the scheduler chose the node
    just before the taint landed): only a fresh read can tell the node is no longer empty."""
    wait_until(lambda: world.has_taint(node), 40, f"{node} tainted for removal", step=0.05)
    world.job_on(node, name)  # its pod exists (the Job controller made it) when this returns


def _survives(world, node: str, iid: str, job: str, watch_s: float) -> None:
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline:
        assert world.in_service(CPU, iid), f"the instance of {node} was terminated under {job}"
        time.sleep(0.5)
    assert world.job_running(job, node), f"{job} no longer runs on {node}"
    assert not world.violations, world.violations


def test_a_stalled_pods_watch_never_kills_a_job(world):
    """The pods watch goes silent while the rest of the API answers; a Job's pod lands on an idle node."""
    node, iid = world.node_for(CPU)
    r = world.replica("solo")
    world.faults.stall = True
    _job_lands_after_the_taint(world, node, "train-stall")
    _survives(world, node, iid, "train-stall", 15)
    assert not world.has_taint(node), "untainted: a pod runs there"
    assert r.alive(), r.tail()


def test_a_lagging_pods_watch_never_kills_a_job(world):
    """Every pods watch event arrives 4 s late."""
    node, iid = world.node_for(CPU)
    world.replica("solo")
    world.faults.lag_s = 4.0
    _job_lands_after_the_taint(world, node, "train-lag")
    _survives(world, node, iid, "train-lag", 12)


@pytest.mark.parametrize("status", [500, 429])
def test_an_unreadable_pods_api_holds_scale_down_and_fails_readiness(world, status):
    """Pods can be neither listed nor watched (500, as when etcd is unavailable; or 429, as API Priority and Fairness
    rejects an overloaded client): the cache ages, /readyz fails, nothing is removed."""
    node, iid = world.node_for(CPU)
    r = world.replica("solo")
    world.faults.fail_pods = status
    world.job_on(node, "train-blind")
    wait_until(lambda: r.get("/readyz")[0] == 503, 30, "/readyz 503 on a stale pods cache")
    assert "pods cache" in r.get("/readyz")[1]
    assert (r.metric("autoscaler_cache_age_seconds", cache="pods") or 0) > 10
    _survives(world, node, iid, "train-blind", 10)
    assert not world.has_taint(node)


def test_a_node_the_parser_rejects_is_left_alone(world):
    """A Node whose allocatable the snapshot parser rejects: its instance, launched long ago, must not look like
    one that never registered (that one would be terminated after the boot timeout)."""
    node, iid = world.node_for(CPU, launched_ago_s=600)
    world.job_on(node, "train-odd")
    world.core.patch_node_status(node, {"status": {"capacity": UNREADABLE, "allocatable": UNREADABLE}})
    assert world.node(node)["status"]["allocatable"]["example.com/fpga"] == "10E", "kube-apiserver kept it"
    r = world.replica("solo")
    _survives(world, node, iid, "train-odd", 12)
    assert r.metric("autoscaler_unparsed_nodes") == 1


def test_a_deposed_leader_s_slow_write_never_lands_after_the_new_leader_acts(world):
    """The leader is cut off from Kubernetes while its SetDesiredCapacity is slow (25 s); the other replica takes
    over and scales; the old leader's write must not land after that (it gave up at its write deadline)."""
    a = world.replica("replica-a", leader_elect=True)
    b = world.replica("replica-b", leader_elect=True)

    def holder():
        return (kubectl(world.kubeconfig, "get", "lease", "-n", "research-autoscaler", "research-autoscaler")
                .get("spec", {}).get("holderIdentity"))  # fmt: skip

    first = wait_until(holder, 40, "a leader")
    leader, other = (a, b) if first == "replica-a" else (b, a)
    leader.door.delay["SetDesiredCapacity"] = 25.0
    _gpu_pod(world, "train-0")
    wait_until(
        lambda: leader.door.calls.get("SetDesiredCapacity"), 30, "the leader's slow SetDesiredCapacity"
    )
    leader.proxy.cut()
    wait_until(
        lambda: [w for w in other.door.writes if w["action"] == "SetDesiredCapacity"],
        60,
        "the new leader acts",
    )
    took_over = min(w["at"] for w in other.door.writes)
    time.sleep(28)  # past the old leader's slow write
    late = [w for w in leader.door.writes if w["at"] > took_over]
    assert not late, f"the deposed leader's writes landed after the new leader acted: {late}"
    assert not world.violations, world.violations


def test_with_every_api_request_taking_5_s_the_leader_keeps_its_lease_and_acts(world):
    """Every Kubernetes API request takes 5 s: renewals must still keep the lease, and passes must run."""
    r = world.replica("solo", leader_elect=True)
    world.faults.delay_s = 5.0
    time.sleep(20)  # every renewal since is slow: a leader that counts them wrongly no longer acts
    _gpu_pod(world, "train-slow")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] >= 1, 60, "the pending pod's scale-up")
    held = []
    for _ in range(6):
        held.append((r.metric("autoscaler_leader"), r.get("/healthz")[0]))
        time.sleep(2)
    assert all(gauge == 1.0 for gauge, _ in held), held
    assert not world.violations, world.violations


def test_a_deleted_launch_template_fails_its_group_alone(world):
    """The CPU group's launch template is deleted: the region's GPU group still scales."""
    ec2 = world.session.client("ec2", region_name="us-west-2", endpoint_url=world.obs.url)
    ec2.delete_launch_template(LaunchTemplateName=CPU)
    world.replica("solo")
    _gpu_pod(world, "train-lt")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 1, 30, "us-west-2's GPU group scales")
    assert world.group(EAST)["DesiredCapacity"] == 0
    assert not world.violations, world.violations


def test_a_refused_set_desired_backs_the_group_off_and_spills(world):
    """SetDesiredCapacity on the us-west-2 GPU group is a ValidationError every time: that group backs off and
    the pod's capacity comes from us-east-1; no retry every pass."""
    r = world.replica("solo")
    r.door.fail["SetDesiredCapacity"] = (400, "ValidationError", WEST)
    _gpu_pod(world, "train-refused")
    wait_until(lambda: world.group(EAST)["DesiredCapacity"] == 1, 30, "the pod spills to us-east-1")
    tries = r.door.calls.get("SetDesiredCapacity", 0)
    time.sleep(5)
    assert r.door.calls.get("SetDesiredCapacity", 0) - tries <= 1, "the refused group is not asked every pass"
    assert not world.violations, world.violations


def test_a_capacity_failure_read_during_500s_is_not_lost(world):
    """us-west-2 has no p3.16xlarge capacity, and DescribeScalingActivities answers 500 while the launch fails: the
    failure must still be read once the API recovers, and the pod spill over."""
    from localcluster import aws_server

    aws_server.LIMITS[("us-west-2", "p3.16xlarge")] = 0
    r = world.replica("solo")
    r.door.fail["DescribeScalingActivities"] = (500, "InternalFailure", None)
    _gpu_pod(world, "train-ice")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 1, 30, "us-west-2 asked for the node")
    time.sleep(4)  # passes run while the failure cannot be read
    del r.door.fail["DescribeScalingActivities"]
    wait_until(lambda: world.group(EAST)["DesiredCapacity"] == 1, 40, "the pod spills to us-east-1")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 0, 10, "us-west-2 back to what exists")
    assert not world.violations, world.violations
