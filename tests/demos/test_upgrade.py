"""The upgrade demo's moves against moto: the new launch template version as Terraform makes it, and what the
autoscaler's AWS adapter then reports (the whole demo, on the real control plane with `autoscaler run`, is `invoke
demo-upgrade`, run by `make docs-check`)."""

from __future__ import annotations

import boto3

from autoscaler.adapters.aws import AwsCloud
from autoscaler.core.drift import reason
from autoscaler.core.model import LaunchTemplate
from clusterspec.loader import load_spec
from demos.upgrade import NEW_AMI, after_jobs, before_jobs, images, upgrade_groups
from localcluster.aws_bootstrap import DEMO_AMI, create_groups
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures

REGION = "us-west-2"


def test_upgraded_groups_launch_the_new_image_and_old_instances_are_drifted(moto_url):  # noqa: F811
    spec = load_spec()
    groups = create_groups(spec, moto_url, [REGION])
    asg = boto3.Session(aws_access_key_id="demo", aws_secret_access_key="demo").client(
        "autoscaling", region_name=REGION, endpoint_url=moto_url
    )
    v100 = "dlr-us-west-2-gpu-v100x8"
    asg.set_desired_capacity(AutoScalingGroupName=v100, DesiredCapacity=2)
    before = images(moto_url, REGION, groups)
    assert set(before[v100].values()) == {DEMO_AMI}
    versions = upgrade_groups(moto_url, REGION, groups)
    assert set(versions) == set(groups) and set(versions.values()) == {"2"}
    asg.set_desired_capacity(AutoScalingGroupName=v100, DesiredCapacity=3)
    after = images(moto_url, REGION, groups)[v100]
    assert sorted(after.values()) == [NEW_AMI, DEMO_AMI, DEMO_AMI]

    cloud = AwsCloud(spec.name, [REGION], endpoint_url=moto_url, max_attempts=1)
    group = {g["name"]: g for g in cloud.list_groups()}[v100]
    assert group["instance_type"] == "p3.16xlarge", "the new version keeps the whole template"
    want = LaunchTemplate(**group["launch_template"])
    drifted = {i["id"] for i in group["instances"] if reason(LaunchTemplate(**i["launch_template"]), want)}
    assert drifted == {i for i, img in after.items() if img == DEMO_AMI}


def test_the_first_jobs_fill_whole_nodes_and_the_later_ones_need_new_ones():
    first = before_jobs()
    assert sum(j.gpus for j in first) == 6 * 8 + 1
    assert [j.gpus for j in after_jobs()] == [8, 8]
    assert max(j.duration_s for j in first) > 25 * 60, "the longest job outlives the drift deadline"
