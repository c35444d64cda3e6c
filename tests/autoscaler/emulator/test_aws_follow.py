"""Nodes following the instances of Auto Scaling groups on a moto server (the demo's wiring)."""

from __future__ import annotations

import time

import pytest

from autoscaler.adapters.aws import AwsCloud
from autoscaler.emulator.aws_follow import AwsFollower
from autoscaler.model import ClusterModel, WallClock
from clusterspec.loader import load_spec
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


def test_a_loopback_endpoint_needs_no_credentials_in_the_environment():
    """Issue 16: the emulator printed `aws call failed` twice a second, with no reason, when the environment had
    no AWS credentials; moto checks none, botocore only needs some to sign."""
    from autoscaler.emulator.__main__ import local_endpoint_credentials

    env: dict[str, str] = {}
    local_endpoint_credentials("http://127.0.0.1:5000", env)
    assert env["AWS_ACCESS_KEY_ID"] == "emulator" and env["AWS_SECRET_ACCESS_KEY"] == "emulator"
    for url, given in [
        ("https://autoscaling.us-west-2.amazonaws.com", {}),
        ("http://127.0.0.1:5000", {"AWS_PROFILE": "lab"}),
    ]:
        env = dict(given)
        local_endpoint_credentials(url, env)
        assert env == given  # real endpoints, and a chosen profile, keep the usual credential chain


def test_a_failing_listing_is_logged_once_with_its_reason(caplog):
    import threading

    from autoscaler.emulator.aws_follow import AwsFollower

    class Broken:
        calls = 0

        def list_groups(self):
            Broken.calls += 1
            raise RuntimeError("Unable to locate credentials")

    follower = AwsFollower.__new__(AwsFollower)
    follower.errors, follower.interval_s, follower._stop = 0, 0.0, threading.Event()
    follower.sync_once = lambda: Broken().list_groups()
    timer = threading.Timer(0.2, follower._stop.set)
    timer.start()
    with caplog.at_level("WARNING", logger="autoscaler.emulator.aws_follow"):
        follower._run()
    said = [r.getMessage() for r in caplog.records if "following AWS" in r.getMessage()]
    assert Broken.calls > 3 and len(said) == 1 and "Unable to locate credentials" in said[0]
