"""The AWS adapter against a moto server on loopback, three regions at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler import metrics
from autoscaler.adapters import aws_models
from autoscaler.adapters.aws import AwsCloud, CloudError
from clusterspec.loader import load_spec
from clusterspec.names import CA_CLUSTER_TAG_PREFIX, CA_ENABLED_TAG, NODE_GROUP_LABEL
from tests.autoscaler import aws_faults
from tests.autoscaler.aws_setup import SESSION, create_groups, group_tags
from tests.autoscaler.moto_fixtures import reset

REGIONS = ["us-west-2", "us-east-1", "us-east-2"]


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture(scope="module")
def groups_url(_moto_server, spec):
    """The spec's groups, made once for the module: each test changes only groups no other test reads."""
    create_groups(spec, reset(_moto_server))
    return _moto_server


@pytest.fixture(scope="module")
def lean_session():
    """As the live process makes it (AwsCloud without a session): clients that know only the adapter's calls."""
    return aws_models.session()


@pytest.fixture
def cloud(groups_url, spec, lean_session):
    return AwsCloud(spec.name, REGIONS, endpoint_url=groups_url, max_attempts=1, session=lean_session)


def _asg(moto_url, region):
    return SESSION.client("autoscaling", region_name=region, endpoint_url=moto_url)


def _errors(where, operation):
    return (
        metrics.REGISTRY.get_sample_value(
            "autoscaler_api_errors_total", {"api": "aws", "where": where, "operation": operation}
        )
        or 0
    )


def test_discovers_every_group_in_every_region(cloud, spec):
    groups = {g["name"]: g for g in cloud.list_groups()}
    expected = {spec.asg_name(r.name, g) for r in spec.regions for g in r.node_groups}
    assert set(groups) == expected
    v100 = groups["dlr-us-east-1-gpu-v100x8"]
    assert v100["region"] == "us-east-1"
    assert v100["zones"] == ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
    assert (v100["instance_type"], v100["min"], v100["max"], v100["priority"]) == ("p3.16xlarge", 0, 100, 10)
    assert v100["labels"]["research.cluster/gpu-model"] == "v100"
    assert v100["labels"][NODE_GROUP_LABEL] == "dlr-us-east-1-gpu-v100x8"
    assert v100["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    # moto's DescribeInstanceTypes does not know p3.16xlarge: the bundled table answers
    assert v100["allocatable"]["nvidia.com/gpu"] == "8"
    assert v100["price_per_hour"] == 24.48
    # the mixed-instances group takes its first override; g5.12xlarge comes from DescribeInstanceTypes
    spot = groups["dlr-us-west-2-gpu-a10g-spot"]
    assert spot["instance_type"] == "g5.12xlarge"
    assert spot["allocatable"]["nvidia.com/gpu"] == "4"
    assert {t["key"] for t in spot["taints"]} == {"nvidia.com/gpu", "research.cluster/spot"}
    cpu = groups["dlr-us-west-2-cpu"]
    assert cpu["desired"] == 1 and len(cpu["instances"]) == 1
    assert cpu["instances"][0]["state"] == "InService" and cpu["instances"][0]["launched_at"].endswith("Z")


def test_ignores_groups_of_other_clusters_and_disabled_groups(cloud, groups_url):
    asg = _asg(groups_url, "us-east-2")
    lt = {"LaunchTemplateName": "dlr-us-east-2-cpu", "Version": "$Latest"}
    other = group_tags("other", "other-cpu", {}, [], 0)
    disabled = [
        {**t, "ResourceId": "dlr-disabled", "Value": "false" if t["Key"] == CA_ENABLED_TAG else t["Value"]}
        for t in group_tags("dlr", "dlr-disabled", {}, [], 0)
    ]
    for name, tags in [("other-cpu", other), ("dlr-disabled", disabled)]:
        asg.create_auto_scaling_group(
            AutoScalingGroupName=name, MinSize=0, MaxSize=2, LaunchTemplate=lt,
            AvailabilityZones=["us-east-2a"], Tags=tags,
        )  # fmt: skip
    names = {g["name"] for g in cloud.list_groups()}
    assert "other-cpu" not in names and "dlr-disabled" not in names
    assert any(t["Key"] == CA_CLUSTER_TAG_PREFIX + "other" for t in other)


def test_set_desired_is_bounded_by_the_group(cloud, groups_url):
    cloud.list_groups()
    cloud.set_desired("dlr-us-east-1-gpu-t4", 3)
    with pytest.raises(CloudError, match=r"outside \[0, 40\]"):
        cloud.set_desired("dlr-us-east-1-gpu-t4", 41)
    with pytest.raises(CloudError, match="not a discovered group"):
        cloud.set_desired("dlr-eu-west-1-gpu-t4", 1)
    g = _asg(groups_url, "us-east-1").describe_auto_scaling_groups(
        AutoScalingGroupNames=["dlr-us-east-1-gpu-t4"]
    )
    assert g["AutoScalingGroups"][0]["DesiredCapacity"] == 3


def test_terminate_decrements_and_checks_membership(cloud):
    cloud.list_groups()
    cloud.set_desired("dlr-us-west-2-gpu-t4", 2)
    group = {g["name"]: g for g in cloud.list_groups()}["dlr-us-west-2-gpu-t4"]
    victim = group["instances"][0]["id"]
    with pytest.raises(CloudError, match="not in group"):
        cloud.terminate_instance("dlr-us-west-2-cpu", victim)
    cloud.terminate_instance("dlr-us-west-2-gpu-t4", victim)
    after = {g["name"]: g for g in cloud.list_groups()}["dlr-us-west-2-gpu-t4"]
    assert after["desired"] == 1 and victim not in {i["id"] for i in after["instances"]}
    with pytest.raises(CloudError, match="below the minimum 1"):
        cpu = {g["name"]: g for g in cloud.list_groups()}["dlr-us-west-2-cpu"]
        cloud.terminate_instance("dlr-us-west-2-cpu", cpu["instances"][0]["id"])


def test_scaling_failures_are_classified_and_filtered(cloud):
    cloud.list_groups()
    aws_faults.failed_activities(
        cloud.client("autoscaling", "us-west-2"),
        [
            {"group": "dlr-us-west-2-gpu-v100x8", "at": aws_faults.at("2026-11-29T10:05:00Z"),
             "message": "We currently do not have sufficient p3.16xlarge capacity in the Availability Zone "
                        "you requested (us-west-2a).",
             "description": "Launching 4 new EC2 instances.  Status Reason: no capacity"},
            {"group": "dlr-us-west-2-gpu-t4", "at": aws_faults.at("2026-11-29T10:04:00Z"),
             "message": "Launching a new EC2 instance: i-0123", "status": "Successful"},
            {"group": "not-ours", "at": aws_faults.at("2026-11-29T10:03:00Z"), "message": "VcpuLimitExceeded"},
            {"group": "dlr-us-west-2-cpu", "at": aws_faults.at("2026-11-29T09:00:00Z"),
             "message": "InstanceLimitExceeded"},
            {"group": "dlr-us-west-2-gpu-a100x8", "started": aws_faults.at("2026-11-29T09:59:50Z"),
             "at": aws_faults.at("2026-11-29T10:00:20Z"), "message": "VcpuLimitExceeded - You have requested more vCPU capacity"},
        ],
    )  # fmt: skip
    found = cloud.scaling_failures(aws_faults.at("2026-11-29T10:00:00Z"))
    assert found == [
        {
            "group": "dlr-us-west-2-gpu-v100x8",
            "region": "us-west-2",
            "reason": "insufficient-capacity",
            "message": found[0]["message"],
            "at": "2026-11-29T10:05:00Z",
            "missing": 4,
        },
        {  # started before the last read, failed after it
            "group": "dlr-us-west-2-gpu-a100x8",
            "region": "us-west-2",
            "reason": "vcpu-limit",
            "message": found[1]["message"],
            "at": "2026-11-29T10:00:20Z",
            "missing": 1,
        },
    ]


@pytest.mark.parametrize(("status", "code"), [(500, "InternalFailure"), (400, "Throttling")])
def test_an_error_in_one_region_leaves_the_others(cloud, status, code):
    before = _errors("us-east-1", "DescribeAutoScalingGroups")
    aws_faults.http_error(cloud.client("autoscaling", "us-east-1"), "DescribeAutoScalingGroups", status, code)
    regions = {g["region"] for g in cloud.list_groups()}
    assert regions == {"us-west-2", "us-east-2"}
    assert _errors("us-east-1", "DescribeAutoScalingGroups") == before + 1
    with pytest.raises(CloudError, match="not a discovered group"):
        cloud.set_desired("dlr-us-east-1-cpu", 2)


def test_throttling_is_retried(groups_url, spec):
    cloud = AwsCloud(spec.name, ["us-west-2"], endpoint_url=groups_url, max_attempts=3, session=SESSION)
    calls = aws_faults.http_error(
        cloud.client("autoscaling", "us-west-2"), "DescribeAutoScalingGroups", 400, "Throttling", times=1
    )
    assert len(cloud.list_groups()) == 5
    assert calls["calls"] == 2


def test_failed_set_desired_raises_one_line(cloud):
    cloud.list_groups()
    aws_faults.http_error(cloud.write_client("us-east-2"), "SetDesiredCapacity", 500, "InternalFailure")
    with pytest.raises(CloudError, match="SetDesiredCapacity 2 failed") as e:
        cloud.set_desired("dlr-us-east-2-gpu-t4", 2)
    assert "\n" not in str(e.value)


def test_launch_times_are_looked_up_once_per_instance(cloud):
    calls = []
    ec2 = cloud.client("ec2", "us-east-2")
    ec2.meta.events.register("before-call.ec2.DescribeInstances", lambda params, **_: calls.append(params))
    cloud.list_groups()
    first = len(calls)
    again = {g["name"]: g for g in cloud.list_groups()}
    assert first >= 1 and len(calls) == first, "no new instance: no DescribeInstances"
    assert again["dlr-us-east-2-cpu"]["instances"][0]["launched_at"].endswith("Z")


def test_a_new_launch_template_version_shows_which_instances_are_drifted(cloud, groups_url):
    """Drift (autoscaler/core/drift.py): the group reports the version and image new instances get, each instance
    what it runs. As Terraform does (update_default_version), the new version becomes the default; moto then
    reports every instance at the default version, so the image tells the old instance from the new one. The
    group names the version by number, as terraform/modules/node_group does."""
    from autoscaler.core.drift import reason
    from autoscaler.core.model import LaunchTemplate

    name, region = "dlr-us-east-2-gpu-a100x8", "us-east-2"
    asg = _asg(groups_url, region)
    ec2 = SESSION.client("ec2", region_name=region, endpoint_url=groups_url)
    asg.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=1)
    template = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
    lt_id = template["LaunchTemplate"]["LaunchTemplateId"]
    before = {g["name"]: g for g in cloud.list_groups()}[name]
    assert before["launch_template"] == {"version": "1", "image": "ami-12c6146b"}
    new = ec2.create_launch_template_version(
        LaunchTemplateId=lt_id, SourceVersion="1", LaunchTemplateData={"ImageId": "ami-0a1b2c3d4e5f60718"}
    )["LaunchTemplateVersion"]["VersionNumber"]
    ec2.modify_launch_template(LaunchTemplateId=lt_id, DefaultVersion=str(new))
    # terraform/modules/node_group names the template's latest version, a number
    asg.update_auto_scaling_group(
        AutoScalingGroupName=name, LaunchTemplate={"LaunchTemplateId": lt_id, "Version": str(new)}
    )
    asg.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=2)
    group = {g["name"]: g for g in cloud.list_groups()}[name]
    assert group["launch_template"] == {"version": "2", "image": "ami-0a1b2c3d4e5f60718"}
    images = {i["id"]: i["launch_template"]["image"] for i in group["instances"]}
    old = next(i for i in before["instances"])["id"]
    assert images[old] == "ami-12c6146b"
    assert sorted(images.values()) == ["ami-0a1b2c3d4e5f60718", "ami-12c6146b"]
    want = LaunchTemplate(**group["launch_template"])
    drifted = {i["id"] for i in group["instances"] if reason(LaunchTemplate(**i["launch_template"]), want)}
    assert drifted == {old}


@pytest.mark.parametrize(("operation", "read"), [
    ("DescribeAutoScalingGroups", lambda cloud: cloud.list_groups()),
    ("DescribeScalingActivities", lambda cloud: cloud.scaling_failures(datetime.now(UTC) - timedelta(hours=1))),
])  # fmt: skip
def test_the_regions_are_read_side_by_side(cloud, operation, read):
    """A pass waits for the slowest region, not for their sum: each region's call waits at a barrier the three
    reach only when they are under way at once (one after the other, the first would wait out the timeout)."""
    import threading

    cloud.list_groups()  # the groups known, so each region has activities to read
    barrier = threading.Barrier(len(REGIONS), timeout=10)
    met = []

    def meet(**_):
        met.append(barrier.wait())

    service = "autoscaling"
    for region in REGIONS:
        cloud.client(service, region).meta.events.register(f"before-call.{service}.{operation}", meet)
    try:
        read(cloud)
    finally:
        for region in REGIONS:
            cloud.client(service, region).meta.events.unregister(f"before-call.{service}.{operation}", meet)
    assert sorted(met) == [0, 1, 2] and not cloud.unread_regions
