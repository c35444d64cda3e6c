"""Regional capacity: partial launches, failed scaling activities, retries and capacity events."""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.adapters.failures import classify
from simulator.model import ModelCloud
from tests.simulator.model.builders import group, model

T0 = datetime.fromtimestamp(0, UTC)


def test_request_beyond_capacity_launches_what_fits_and_records_a_partial_failure():
    m = model(group(), group("other", max=5), capacity={"us-west-2/p3.16xlarge": 3})
    cloud = ModelCloud(m)
    cloud.set_desired("other", 1)
    cloud.set_desired("g8", 5)
    (g8,) = [g for g in cloud.list_groups() if g["name"] == "g8"]
    assert g8["desired"] == 5, "AWS leaves the desired capacity where it was set"
    assert len(g8["instances"]) == 2
    (failure,) = cloud.scaling_failures(T0)
    assert failure["group"] == "g8" and failure["missing"] == 3
    assert failure["reason"] == "insufficient-capacity" == classify(failure["message"])
    assert failure["at"] == T0


def test_capacity_is_per_region_and_type():
    m = model(group(), group("east", region="us-east-1"), capacity={("us-west-2", "p3.16xlarge"): 0})
    cloud = ModelCloud(m)
    cloud.set_desired("east", 2)
    cloud.set_desired("g8", 2)
    sizes = {g["name"]: len(g["instances"]) for g in cloud.list_groups()}
    assert sizes == {"g8": 0, "east": 2}
    assert [f["group"] for f in cloud.scaling_failures(T0)] == ["g8"]


def test_failures_since_excludes_older_ones_and_retries_record_new_ones():
    m = model(group(), capacity={"us-west-2/p3.16xlarge": 0}, launch_retry_s=60)
    cloud = ModelCloud(m)
    cloud.set_desired("g8", 2)
    m.advance(60)
    assert len(cloud.scaling_failures(T0)) == 2
    assert [f["at"].timestamp() for f in cloud.scaling_failures(datetime.fromtimestamp(30, UTC))] == [60.0]


def test_capacity_event_lets_the_retry_launch_the_rest():
    m = model(group(), capacity={"us-west-2/p3.16xlarge": 1}, launch_retry_s=60, boot_delays={"p3": 100})
    cloud = ModelCloud(m)
    m.cloud.schedule_capacity(500, "us-west-2", "p3.16xlarge", None)
    cloud.set_desired("g8", 3)
    m.advance(499)
    assert len(cloud.list_groups()[0]["instances"]) == 1
    m.advance(500)
    assert len(cloud.list_groups()[0]["instances"]) == 3
    m.advance(600)
    assert len(m.nodes()) == 3


def test_lowering_desired_terminates_pending_then_idle_instances_first():
    m = model(group(desired=2), boot_delays={"p3": 100})
    cloud = ModelCloud(m)
    m.submit_pod(
        __import__("tests.simulator.model.builders", fromlist=["pod"]).pod("busy", gpus=8, duration=None)
    )
    busy_node = m.pod("research", "busy")["spec"]["nodeName"]
    cloud.set_desired("g8", 3)
    cloud.set_desired("g8", 2)
    assert len(m.nodes()) == 2, "the pending instance went first"
    cloud.set_desired("g8", 1)
    assert [n["metadata"]["name"] for n in m.nodes()] == [busy_node]
    assert m.stats.jobs_killed == 0
