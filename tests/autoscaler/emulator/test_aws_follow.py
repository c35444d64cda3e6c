"""Nodes following the instances of Auto Scaling groups on a moto server (the demo's wiring)."""

from __future__ import annotations

import time

import pytest

from autoscaler.adapters.aws import AwsCloud
from autoscaler.emulator.aws_follow import AwsFollower
from autoscaler.model import ClusterModel, WallClock
from provision.loader import load_spec
from tests.autoscaler.aws_setup import SESSION, create_groups

GROUP = "dlr-us-west-2-gpu-t4"


@pytest.fixture
def follower(moto_url):
    create_groups(load_spec(), moto_url, regions=["us-west-2"])
    model = ClusterModel(WallClock(compression=10_000))
    cloud = AwsCloud("dlr", ["us-west-2"], endpoint_url=moto_url, max_attempts=1, session=SESSION)
    return AwsFollower(model, cloud)


def _nodes(model: ClusterModel, group: str) -> list[dict]:
    with model.lock:
        model.advance()
        return [n for n in model.nodes() if n["metadata"]["labels"]["research.cluster/node-group"] == group]


def _settle(follower: AwsFollower, group: str, count: int) -> list[dict]:
    deadline = time.monotonic() + 5
    while True:
        follower.sync_once()
        nodes = _nodes(follower.model, group)
        if len(nodes) == count or time.monotonic() > deadline:
            return nodes
        time.sleep(0.05)


def test_nodes_register_for_moto_instances_and_leave_with_them(follower, moto_url):
    asg = SESSION.client("autoscaling", region_name="us-west-2", endpoint_url=moto_url)
    assert len(_settle(follower, "dlr-us-west-2-cpu", 1)) == 1, "the cpu group's min instance"
    asg.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=2)
    nodes = _settle(follower, GROUP, 2)
    assert len(nodes) == 2
    ids = {
        i["InstanceId"]
        for i in asg.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0][
            "Instances"
        ]
    }
    assert {n["spec"]["providerID"].rsplit("/", 1)[1] for n in nodes} == ids
    assert nodes[0]["metadata"]["labels"]["research.cluster/gpu-model"] == "t4"
    deadline = time.monotonic() + 5  # registered NotReady; Ready (22 model s) is 2 ms at this compression
    while time.monotonic() < deadline and len(_nodes(follower.model, GROUP)[0]["spec"]["taints"]) > 1:
        time.sleep(0.01)
    assert {t["key"] for t in _nodes(follower.model, GROUP)[0]["spec"]["taints"]} == {"nvidia.com/gpu"}
    assert follower.model.cloud.groups[GROUP].external
    for iid in sorted(ids):  # the groups protect their instances from scale-in: removed one by one, as the
        asg.terminate_instance_in_auto_scaling_group(
            InstanceId=iid, ShouldDecrementDesiredCapacity=True
        )  # autoscaler does
    assert _settle(follower, GROUP, 0) == []
