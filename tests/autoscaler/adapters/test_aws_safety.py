"""The AWS adapter's part in never killing a job (issue 10), on a moto server: groups are adopted with scale-in
protection, a group whose launch template is gone fails alone, refusals are told from transient errors, writes
carry a deadline, and regions that could not be read are named."""

from __future__ import annotations

import pytest

from autoscaler.adapters.aws import AwsCloud, CloudError
from tests.autoscaler import aws_faults
from tests.autoscaler.aws_setup import SESSION, group_tags
from tests.autoscaler.moto_fixtures import _moto_server, moto_url, reset  # noqa: F401 - fixtures

REGION = "us-west-2"


@pytest.fixture(autouse=True)
def _leave_moto_empty(_moto_server):  # noqa: F811 - moto's backends are per process: other tests create these names
    yield
    reset(_moto_server)


def _clients(url):
    kw = {"region_name": REGION, "endpoint_url": url}
    return SESSION.client("ec2", **kw), SESSION.client("autoscaling", **kw)


def _group(url, name, *, desired=0, protected=False, instance_type="m6i.2xlarge") -> str:
    ec2, asg = _clients(url)
    lt = ec2.create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": instance_type}
    )["LaunchTemplate"]
    asg.create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=0, MaxSize=10, DesiredCapacity=desired,
        AvailabilityZones=[f"{REGION}a"], NewInstancesProtectedFromScaleIn=protected,
        LaunchTemplate={"LaunchTemplateId": lt["LaunchTemplateId"], "Version": "$Latest"},
        Tags=group_tags("dlr", name, {}, [], 0),
    )  # fmt: skip
    return lt["LaunchTemplateId"]


def _cloud(url) -> AwsCloud:
    return AwsCloud("dlr", [REGION], endpoint_url=url, max_attempts=1, session=SESSION)


def test_an_adopted_group_protects_its_instances_so_no_lowering_of_desired_picks_one(moto_url):  # noqa: F811
    _group(moto_url, "dlr-us-west-2-cpu", desired=3)
    cloud = _cloud(moto_url)
    cloud.list_groups()
    assert cloud.unprotected_groups() == ["dlr-us-west-2-cpu"]
    cloud.protect("dlr-us-west-2-cpu")
    _, asg = _clients(moto_url)
    g = asg.describe_auto_scaling_groups(AutoScalingGroupNames=["dlr-us-west-2-cpu"])["AutoScalingGroups"][0]
    assert g["NewInstancesProtectedFromScaleIn"] is True
    assert [i["ProtectedFromScaleIn"] for i in g["Instances"]] == [True, True, True]
    cloud.list_groups()
    assert cloud.unprotected_groups() == []
    # the last line: anyone (a deposed leader's late write, a person) lowering desired lets AWS pick none of them
    asg.set_desired_capacity(AutoScalingGroupName="dlr-us-west-2-cpu", DesiredCapacity=0)
    g = asg.describe_auto_scaling_groups(AutoScalingGroupNames=["dlr-us-west-2-cpu"])["AutoScalingGroups"][0]
    assert len(g["Instances"]) == 3
    # while the autoscaler removes exactly the instance it chose, protected or not
    cloud.list_groups()
    victim = g["Instances"][0]["InstanceId"]
    asg.set_desired_capacity(AutoScalingGroupName="dlr-us-west-2-cpu", DesiredCapacity=3)
    cloud.list_groups()
    cloud.terminate_instance("dlr-us-west-2-cpu", victim)
    g = asg.describe_auto_scaling_groups(AutoScalingGroupNames=["dlr-us-west-2-cpu"])["AutoScalingGroups"][0]
    assert victim not in {i["InstanceId"] for i in g["Instances"]} and g["DesiredCapacity"] == 2


def test_a_deleted_launch_template_fails_its_group_alone(moto_url):  # noqa: F811
    lt = _group(moto_url, "dlr-us-west-2-a", protected=True)
    _group(moto_url, "dlr-us-west-2-b", protected=True)
    cloud = _cloud(moto_url)
    assert {g["name"] for g in cloud.list_groups()} == {"dlr-us-west-2-a", "dlr-us-west-2-b"}
    cloud._templates.clear()  # the 5-minute template cache has run out
    ec2, _ = _clients(moto_url)
    ec2.delete_launch_template(LaunchTemplateId=lt)
    groups = {g["name"]: g for g in cloud.list_groups()}
    assert set(groups) == {"dlr-us-west-2-a", "dlr-us-west-2-b"} and not cloud.unread_regions
    assert groups["dlr-us-west-2-a"]["instance_type"] == "m6i.2xlarge"  # kept with its last known type
    from datetime import UTC, datetime, timedelta

    failures = cloud.scaling_failures(datetime.now(UTC) - timedelta(minutes=1))
    assert [(f["group"], f["reason"]) for f in failures] == [("dlr-us-west-2-a", "unknown")]
    assert "launch template" in failures[0]["message"]
    again = cloud.scaling_failures(datetime.now(UTC))
    assert again[0]["at"] == failures[0]["at"], "reported with the time first seen: counted once"
    fresh = _cloud(
        moto_url
    )  # a process started after the deletion does not know its type: only it is left out
    assert {g["name"] for g in fresh.list_groups()} == {"dlr-us-west-2-b"} and not fresh.unread_regions


@pytest.mark.parametrize(("code", "permanent"), [("ValidationError", True), ("Throttling", False)])
def test_refusals_are_told_from_transient_errors(moto_url, code, permanent):  # noqa: F811
    _group(moto_url, "dlr-us-west-2-cpu", protected=True)
    cloud = _cloud(moto_url)
    cloud.list_groups()
    aws_faults.http_error(cloud.write_client(REGION), "SetDesiredCapacity", 400, code)
    with pytest.raises(CloudError) as e:
        cloud.set_desired("dlr-us-west-2-cpu", 2)
    assert e.value.permanent is permanent
    with pytest.raises(CloudError) as e:
        cloud.set_desired("dlr-us-west-2-cpu", 11)
    assert e.value.permanent, "outside [min, max]: asking again will not help"


def test_writes_make_one_attempt_within_their_deadline(moto_url):  # noqa: F811
    cloud = AwsCloud("dlr", [REGION], endpoint_url=moto_url, session=SESSION, write_timeout_s=4.0)
    cfg = cloud.write_client(REGION).meta.config
    assert cfg.retries["total_max_attempts"] == 1
    assert cfg.connect_timeout + cfg.read_timeout <= 4.0


def test_unreadable_regions_are_named(moto_url):  # noqa: F811
    _group(moto_url, "dlr-us-west-2-cpu", protected=True)
    cloud = _cloud(moto_url)
    aws_faults.http_error(
        cloud.client("autoscaling", REGION), "DescribeScalingActivities", 500, "InternalFailure"
    )
    cloud.list_groups()
    assert cloud.unread_regions == set()
    from datetime import UTC, datetime

    cloud.scaling_failures(datetime.now(UTC))
    assert cloud.unread_regions == {REGION}
    aws_faults.http_error(
        cloud.client("autoscaling", REGION), "DescribeAutoScalingGroups", 500, "InternalFailure"
    )
    assert cloud.list_groups() == [] and cloud.unread_regions == {REGION}
