"""The demo's capacity failure is on the AWS side of the wire: the unmodified AWS adapter sees it as AWS shows it."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.aws import AwsCloud
from clusterspec.loader import load_spec
from demos.autoscaler_demo.run import capacity_limits
from localcluster import aws_server
from localcluster.aws_bootstrap import create_groups
from tests.autoscaler.moto_fixtures import reset


@pytest.fixture
def limited_moto():
    spec = load_spec()
    aws_server.install(capacity_limits(spec))
    server = aws_server.serve(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:  # moto's backends are per process: start empty whatever other tests left in them
        yield spec, reset(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join(5)
        aws_server.uninstall()


def test_first_region_runs_out_of_its_8_gpu_types():
    limits = capacity_limits(load_spec())
    assert limits == {("us-west-2", "p3.16xlarge"): 2, ("us-west-2", "p4d.24xlarge"): 0}


def test_a_launch_beyond_capacity_is_a_failed_activity_the_adapter_classifies(limited_moto):
    spec, url = limited_moto
    names = create_groups(spec, url, ["us-west-2"])
    assert "dlr-us-west-2-gpu-v100x8" in names
    cloud = AwsCloud("dlr", ["us-west-2"], endpoint_url=url)
    before = datetime.now(UTC) - timedelta(seconds=1)
    groups = {g["name"]: g for g in cloud.list_groups()}
    assert groups["dlr-us-west-2-gpu-v100x8"]["priority"] == 10
    cloud.set_desired("dlr-us-west-2-gpu-v100x8", 5)
    cloud.set_desired("dlr-us-west-2-gpu-t4", 3)  # no limit on this type
    groups = {g["name"]: g for g in cloud.list_groups()}
    assert groups["dlr-us-west-2-gpu-v100x8"]["desired"] == 5  # AWS keeps the desired capacity
    assert len(groups["dlr-us-west-2-gpu-v100x8"]["instances"]) == 2
    assert len(groups["dlr-us-west-2-gpu-t4"]["instances"]) == 3
    (failure,) = cloud.scaling_failures(before)
    assert failure["group"] == "dlr-us-west-2-gpu-v100x8"
    assert failure["reason"] == "insufficient-capacity"
    assert failure["missing"] == 3


def test_bad_limit_is_one_line():
    with pytest.raises(ValueError, match=r"expected REGION/INSTANCE-TYPE=N"):
        aws_server.parse_limit("us-west-2=3")


# --- the embedded AWS of the day-one rehearsal (issue 34): TLS, the state bucket's TLS-only policy, the account
# answers moto lacks. A real server on loopback and boto3 over HTTPS, as `make day-one` uses them.
@pytest.fixture
def embedded_aws(tmp_path, monkeypatch):
    import boto3

    cert, key = aws_server.tls_certificate(tmp_path / "tls")
    aws_server.install({})
    aws_server.install_transport(secure=True)
    aws_server.install_account()
    aws_server.install_ec2()
    server = aws_server.serve(0, (cert, key))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"https://127.0.0.1:{server.server_port}"
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_CA_BUNDLE": str(cert),
                 "AWS_ENDPOINT_URL": url}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    try:
        import requests

        requests.post(f"{url}/moto-api/reset", verify=str(cert), timeout=10).raise_for_status()
        yield boto3.Session(region_name="us-west-2"), url
    finally:
        server.shutdown()
        thread.join(5)
        aws_server.uninstall()


def test_a_tls_only_bucket_admits_tls_and_refuses_plain_http(embedded_aws):
    from botocore.exceptions import ClientError

    from provision.terraform.bootstrap import _tls_only

    session, url = embedded_aws
    s3 = session.client("s3")
    s3.create_bucket(Bucket="state", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_bucket_policy(Bucket="state", Policy=_tls_only("state"))
    s3.put_object(Bucket="state", Key="k", Body=b"1")  # over TLS: admitted (moto alone denies it)
    aws_server.install_transport(secure=False)  # the same policy seen by a plain-HTTP server
    with pytest.raises(ClientError, match="403"):
        s3.put_object(Bucket="state", Key="k", Body=b"2")


def test_the_account_answers_the_preflight(embedded_aws):
    from provision import preflight
    from provision.terraform import endpoint

    session, _ = embedded_aws
    sq = session.client("service-quotas")
    values = {
        q["QuotaCode"]: q["Value"] for q in sq.list_aws_default_service_quotas(ServiceCode="ec2")["Quotas"]
    }
    assert values["L-417A185B"] == 0.0 and values["L-1216C47A"] == 5.0  # a new account: no P instances
    sq.request_service_quota_increase(ServiceCode="ec2", QuotaCode="L-417A185B", DesiredValue=768)
    clients = lambda service, region: endpoint.client(session, service, region)  # noqa: E731
    assert preflight.quotas(clients, "us-west-2")["L-417A185B"] == 768.0
    assert preflight.quotas(clients, "us-east-1")["L-417A185B"] == 0.0  # per region
    limit = session.client("lambda").get_account_settings()["AccountLimit"]
    assert limit["UnreservedConcurrentExecutions"] == aws_server.LAMBDA_CONCURRENCY
    image = session.client("ssm").get_parameter(Name=aws_server.CANONICAL_PARAMETERS[0])["Parameter"]["Value"]
    assert session.client("ec2").describe_images(ImageIds=[image])["Images"]
    # S3 Control on a loopback endpoint: no <account>. host prefix
    s3control = endpoint.client(session, "s3control", "us-west-2")
    with pytest.raises(s3control.exceptions.ClientError, match="NoSuchPublicAccessBlockConfiguration"):
        s3control.get_public_access_block(AccountId="123456789012")


def test_access_logging_to_a_bucket_whose_policy_also_denies_plain_http(embedded_aws):
    """terraform/modules/buckets' log bucket: the TLS-only Deny ("*" principal) and the grant to the logging
    service in one policy; moto alone fails PutBucketLogging on it with HTTP 500."""
    session, _ = embedded_aws
    s3 = session.client("s3")
    for b in ("logs", "data"):
        s3.create_bucket(Bucket=b, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    from provision.terraform.bootstrap import _tls_only

    deny = json.loads(_tls_only("logs"))
    grant = {"Sid": "S3ServerAccessLogsDelivery", "Effect": "Allow", "Action": "s3:PutObject",
             "Principal": {"Service": "logging.s3.amazonaws.com"}, "Resource": "arn:aws:s3:::logs/*"}  # fmt: skip
    s3.put_bucket_policy(Bucket="logs", Policy=json.dumps({**deny, "Statement": deny["Statement"] + [grant]}))
    s3.put_bucket_logging(
        Bucket="data",
        BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "logs", "TargetPrefix": "data/"}},
    )
    assert s3.get_bucket_logging(Bucket="data")["LoggingEnabled"]["TargetBucket"] == "logs"
    s3.put_bucket_policy(Bucket="logs", Policy=json.dumps(deny))  # without the grant: AWS refuses it
    with pytest.raises(s3.exceptions.ClientError, match="InvalidTargetBucketForLogging"):
        s3.put_bucket_logging(
            Bucket="data",
            BucketLoggingStatus={"LoggingEnabled": {"TargetBucket": "logs", "TargetPrefix": "x/"}},
        )


def test_placement_groups_and_detailed_monitoring(embedded_aws):
    """What the EFA node groups and every instance of the roots call, which moto does not implement."""
    session, _ = embedded_aws
    ec2 = session.client("ec2")
    made = ec2.create_placement_group(
        GroupName="dlr-efa", Strategy="cluster",
        TagSpecifications=[{"ResourceType": "placement-group", "Tags": [{"Key": "k", "Value": "v"}]}],
    )["PlacementGroup"]  # fmt: skip
    assert made["State"] == "available" and made["GroupId"].startswith("pg-")
    (found,) = ec2.describe_placement_groups(GroupNames=["dlr-efa"])["PlacementGroups"]
    assert found["Strategy"] == "cluster" and found["Tags"] == [{"Key": "k", "Value": "v"}]
    with pytest.raises(ec2.exceptions.ClientError, match="InvalidPlacementGroup.Duplicate"):
        ec2.create_placement_group(GroupName="dlr-efa", Strategy="cluster")
    ec2.delete_placement_group(GroupName="dlr-efa")
    with pytest.raises(ec2.exceptions.ClientError, match="InvalidPlacementGroup.Unknown"):
        ec2.describe_placement_groups(GroupNames=["dlr-efa"])
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    (instance,) = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.small")[
        "Instances"
    ]
    (m,) = ec2.monitor_instances(InstanceIds=[instance["InstanceId"]])["InstanceMonitorings"]
    assert m["Monitoring"]["State"] == "enabled"
    described = ec2.describe_instances(InstanceIds=[instance["InstanceId"]])["Reservations"][0]["Instances"][
        0
    ]
    assert described["Monitoring"]["State"] == "enabled"


def test_iam_refuses_a_managed_policy_arn_under_the_wrong_path(embedded_aws, monkeypatch):
    """The seam of terraform/modules/backup (issue 34): the S3 backup policies live at policy/<name>, not under
    service-role/; the embedded IAM answers as AWS does (NoSuchEntity), so the rehearsal fails on the old ARNs."""
    from moto.iam.models import iam_backends

    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "false")  # restored after the test
    aws_server.load_managed_policies()
    iam_backends.reset()  # the account's IAM made again, now with AWS's managed policies
    session, _ = embedded_aws
    iam = session.client("iam")
    iam.create_role(RoleName="backup", AssumeRolePolicyDocument="{}")
    for arn in ("arn:aws:iam::aws:policy/AWSBackupServiceRolePolicyForS3Backup",
                "arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup"):  # fmt: skip
        iam.attach_role_policy(RoleName="backup", PolicyArn=arn)
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.attach_role_policy(
            RoleName="backup",
            PolicyArn="arn:aws:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForS3Backup",
        )


def test_a_zone_created_with_a_vpc_is_private(embedded_aws):
    """As the provider creates terraform/modules/dns' zone (a VPC, no PrivateZone flag); the other regions look it
    up with private_zone = true (modules/dns_association)."""
    session, _ = embedded_aws
    vpc = session.client("ec2").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    r53 = session.client("route53")
    zone = r53.create_hosted_zone(
        Name="research.internal", CallerReference="x", VPC={"VPCRegion": "us-west-2", "VPCId": vpc}
    )["HostedZone"]
    assert zone["Config"]["PrivateZone"] is True
    public = r53.create_hosted_zone(Name="example.org", CallerReference="y")["HostedZone"]
    assert public["Config"]["PrivateZone"] is False
