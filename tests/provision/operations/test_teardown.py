"""`invoke down`'s teardown (provision/operations/teardown.py) against moto: nodes cordoned and the groups let go
before anything else, running jobs waited for or asked about (declined: everything undone, nothing destroyed),
scale-in protection removed only once no job runs, buckets (every version) and image repositories emptied only on
the second confirmation, the scripts' SSM parameters removed after the destroy."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from clusterspec.names import CA_ENABLED_TAG, NODE_GROUP_LABEL
from provision.operations import teardown
from tests.autoscaler.aws_setup import create_groups

REGION = "us-east-2"  # a region that is not the primary: its own root goes alone


class FakeKube:
    def __init__(self, nodes, pods):
        self._nodes, self._pods, self.cordoned = nodes, pods, {}

    def nodes(self):
        return self._nodes

    def pods(self):
        return self._pods

    def cordon(self, name, on=True):
        self.cordoned[name] = on


def _node(name, group=None):
    labels = {NODE_GROUP_LABEL: group} if group else {}
    return {"metadata": {"name": name, "labels": labels}, "spec": {}}


def _pod(name, node, ns="u-alice", phase="Running", owner="Job"):
    return {"metadata": {"name": name, "namespace": ns, "ownerReferences": [{"kind": owner, "name": "x"}]},
            "spec": {"nodeName": node}, "status": {"phase": phase}}  # fmt: skip


def _world(spec):
    create_groups(spec, regions=[REGION])
    asg = boto3.client("autoscaling", region_name=REGION)
    group = spec.asg_name(REGION, "gpu-v100x8")
    asg.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=2)
    ecr = boto3.client("ecr", region_name=REGION)
    ecr.create_repository(repositoryName="dlr/research")
    ecr.put_image(
        repositoryName="dlr/research",
        imageTag="a1b2",
        imageManifest='{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}',
    )
    for region in (REGION, "us-west-2"):
        boto3.client("ssm", region_name=region).put_parameter(
            Name="/dlr/ami/gpu-worker", Value="ami-1", Type="String"
        )
    nodes = [
        _node("v100-a", group),
        _node("v100-b", group),
        _node("west-cpu", "dlr-us-west-2-cpu"),
        _node("cp-0"),
    ]
    pods = [_pod("train-0", "v100-a"), _pod("dcgm", "v100-b", ns="kube-system", owner="DaemonSet"),
            _pod("done", "v100-b", phase="Succeeded"), _pod("elsewhere", "west-cpu")]  # fmt: skip
    return group, FakeKube(nodes, pods)


def _protected(group):
    g = boto3.client("autoscaling", region_name=REGION).describe_auto_scaling_groups(
        AutoScalingGroupNames=[group]
    )
    g = g["AutoScalingGroups"][0]
    return g["NewInstancesProtectedFromScaleIn"], [i["ProtectedFromScaleIn"] for i in g["Instances"]]


def _tag(group):
    g = boto3.client("autoscaling", region_name=REGION).describe_auto_scaling_groups(
        AutoScalingGroupNames=[group]
    )
    return {t["Key"]: t["Value"] for t in g["AutoScalingGroups"][0]["Tags"]}[CA_ENABLED_TAG]


@mock_aws
def test_the_inventory_shows_the_nodes_jobs_data_and_parameters_of_the_region_going():
    spec = load_spec()
    _, kube = _world(spec)
    t = teardown.Teardown(spec, [REGION], kube, boto3.Session(region_name="us-west-2"))
    lines = t.show()
    assert lines[0].startswith("2 nodes to cordon (us-east-2)")
    assert "running: u-alice/train-0 on v100-a" in lines and not any(
        "elsewhere" in x or "dcgm" in x for x in lines
    )
    assert "data: image repository us-east-2/dlr/research: 1 images" in lines
    assert (
        lines[-1]
        == "SSM parameters the scripts wrote, removed after the destroy: us-east-2: /dlr/ami/gpu-worker"
    )


@mock_aws
def test_declining_to_kill_running_jobs_undoes_everything_and_keeps_the_protection():
    spec = load_spec()
    group, kube = _world(spec)
    answers = iter(["delete data", "no"])
    t = teardown.Teardown(spec, [REGION], kube, boto3.Session(region_name="us-west-2"), ask=lambda _: next(answers),
                          say=lambda _: None)  # fmt: skip
    t.show()
    with pytest.raises(UserError) as e:
        t.before()
    assert e.value.lines[0].startswith("1 pods still run; nothing was destroyed")
    assert kube.cordoned == {"v100-a": False, "v100-b": False}, "cordoned, then handed back"
    assert _tag(group) == "true" and _protected(group) == (True, [True, True])
    assert boto3.client("ecr", region_name=REGION).list_images(repositoryName="dlr/research")["imageIds"]


@mock_aws
def test_protection_comes_off_only_once_the_jobs_have_finished():
    spec = load_spec()
    group, kube = _world(spec)
    seen = []

    def sleep(_):  # the wait's poll: the job is still there, the protection still on; then it finishes
        seen.append(_protected(group))
        kube._pods = [p for p in kube._pods if p["metadata"]["name"] != "train-0"]

    t = teardown.Teardown(spec, [REGION], kube, boto3.Session(region_name="us-west-2"), wait_s=3600,
                          ask=lambda _: "delete data", say=lambda _: None)  # fmt: skip
    t.show()
    teardown.drain(spec, t.plan, kube, t.session, yes=False, wait_s=3600, kill_jobs=False, ask=t.ask, say=t.say,
                   sleep=sleep)  # fmt: skip
    assert seen == [(True, [True, True])], "nothing unprotected while the job ran"
    assert kube.cordoned == {"v100-a": True, "v100-b": True} and _tag(group) == "false"
    assert _protected(group) == (False, [False, False])
    assert (
        boto3.client("ecr", region_name=REGION).list_images(repositoryName="dlr/research")["imageIds"] == []
    )


@mock_aws
def test_unattended_data_needs_its_own_flag_and_nothing_changes_without_it():
    spec = load_spec()
    group, kube = _world(spec)
    kube._pods = []
    t = teardown.Teardown(
        spec, [REGION], kube, boto3.Session(region_name="us-west-2"), yes=True, say=lambda _: None
    )
    t.show()
    with pytest.raises(UserError, match="the destroy would delete data"):
        t.before()
    assert kube.cordoned == {} and _protected(group) == (True, [True, True])
    t = teardown.Teardown(spec, [REGION], kube, boto3.Session(region_name="us-west-2"), yes=True, delete_data=True,
                          say=lambda _: None)  # fmt: skip
    t.show()
    t.before()
    assert _protected(group) == (False, [False, False])
    t.after()
    ssm = boto3.client("ssm", region_name=REGION)
    assert ssm.get_parameters(Names=["/dlr/ami/gpu-worker"])["Parameters"] == []
    assert boto3.client("ssm", region_name="us-west-2").get_parameters(Names=["/dlr/ami/gpu-worker"])[
        "Parameters"
    ]


@mock_aws
def test_unattended_running_jobs_need_kill_jobs():
    spec = load_spec()
    group, kube = _world(spec)
    boto3.client("ecr", region_name=REGION).delete_repository(repositoryName="dlr/research", force=True)
    t = teardown.Teardown(
        spec, [REGION], kube, boto3.Session(region_name="us-west-2"), yes=True, say=lambda _: None
    )
    t.show()
    with pytest.raises(UserError, match="pass --kill-jobs with --yes"):
        t.before()
    assert _protected(group) == (True, [True, True])


@mock_aws
def test_the_global_root_empties_every_version_of_its_buckets_on_the_second_confirmation():
    spec = load_spec()
    s3 = boto3.client("s3", region_name="us-west-2")
    bucket = "dlr-results-123456789012"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2"):
        s3.put_object(Bucket=bucket, Key="alice/run-1/metrics.json", Body=body)
    s3.delete_object(Bucket=bucket, Key="alice/run-1/metrics.json")  # a delete marker
    said = []
    t = teardown.Teardown(spec, ["global"], None, boto3.Session(region_name="us-west-2"), ask=lambda _: "delete data",
                          say=said.append)  # fmt: skip
    assert "data: bucket us-west-2/dlr-results-123456789012: 3 object versions, 0.00 GB" in t.show()
    t.before()
    left = s3.list_object_versions(Bucket=bucket)
    assert not left.get("Versions") and not left.get("DeleteMarkers") and said == [f"emptied bucket {bucket}"]


@mock_aws
def test_when_the_primary_region_goes_every_node_is_cordoned():
    spec = load_spec()
    nodes = [_node("cp-0"), _node("titan-01"), _node("x", "dlr-us-east-1-cpu")]
    assert teardown.nodes_going(spec, nodes, {"us-west-2"}) == ["cp-0", "titan-01", "x"]
    assert teardown.nodes_going(spec, nodes, {"us-east-1"}) == ["x"]


@mock_aws
def test_the_access_log_bucket_is_emptied_after_the_buckets_that_log_to_it():
    """The deletions are requests S3 logs: emptied first, the log bucket was full again when Terraform deleted it
    (BucketNotEmpty in `make day-one`). Logging goes off first; the log bucket is emptied last, even when it was
    empty at the inventory; a log target that is not the cluster's own is left alone."""
    spec = load_spec()
    s3 = boto3.client("s3", region_name="us-west-2")
    where = {"LocationConstraint": "us-west-2"}
    logs, results, datasets = (
        "dlr-access-logs-123456789012",
        "dlr-results-123456789012",
        "dlr-datasets-123456789012",
    )
    for b in (logs, results, datasets, "someone-elses-logs"):
        s3.create_bucket(Bucket=b, CreateBucketConfiguration=where)
    s3.put_bucket_policy(Bucket=logs, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{logs}/*"}]}))  # fmt: skip
    for b in (
        results,
        datasets,
    ):  # datasets empty: its logging must stop too (Terraform's own requests are logged)
        s3.put_bucket_logging(Bucket=b, BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": logs,
                                                                                "TargetPrefix": f"{b}/"}})  # fmt: skip
    s3.put_object(Bucket=results, Key="alice/run-1/metrics.json", Body=b"1")
    s3.put_object(Bucket="someone-elses-logs", Key="keep", Body=b"1")
    said = []
    t = teardown.Teardown(spec, ["global"], None, boto3.Session(region_name="us-west-2"), ask=lambda _: "delete data",
                          say=said.append)  # fmt: skip
    t.show()
    s3.put_object(Bucket=logs, Key="results/late-log", Body=b"x")  # a log delivered after the inventory
    t.before()
    assert not s3.list_object_versions(Bucket=results).get("Versions")
    assert not s3.list_objects_v2(Bucket=logs).get("Contents")
    assert "LoggingEnabled" not in s3.get_bucket_logging(Bucket=results)
    assert "LoggingEnabled" not in s3.get_bucket_logging(Bucket=datasets)
    assert said[-1] == f"emptied bucket {logs} (access logs, after the buckets that log to it)"
    assert s3.list_objects_v2(Bucket="someone-elses-logs")["KeyCount"] == 1
