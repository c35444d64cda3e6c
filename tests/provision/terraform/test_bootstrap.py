"""The state bucket (locks are S3 lock files, no table), against moto (no AWS)."""

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from clusterspec.errors import UserError
from provision.terraform.bootstrap import bootstrap_state
from provision.terraform.settings import Backend

BACKEND = Backend.for_cluster("dlr", "us-west-2")


@pytest.fixture
def aws():
    with mock_aws():
        yield boto3.Session(region_name="us-west-2")


def test_creates_a_private_versioned_encrypted_bucket_and_no_lock_table(aws):
    assert bootstrap_state(BACKEND, aws) == {
        "dlr-terraform-state": "created",
        "AWSServiceRoleForAutoScaling": "created",
    }
    s3 = aws.client("s3")
    assert s3.get_bucket_versioning(Bucket=BACKEND.bucket)["Status"] == "Enabled"
    rule = s3.get_bucket_encryption(Bucket=BACKEND.bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    block = s3.get_public_access_block(Bucket=BACKEND.bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values())
    assert "aws:SecureTransport" in s3.get_bucket_policy(Bucket=BACKEND.bucket)["Policy"]
    assert aws.client("dynamodb").list_tables()["TableNames"] == []
    assert s3.get_bucket_location(Bucket=BACKEND.bucket)["LocationConstraint"] == "us-west-2"


def test_is_idempotent(aws):
    bootstrap_state(BACKEND, aws)
    assert bootstrap_state(BACKEND, aws) == {
        "dlr-terraform-state": "exists",
        "AWSServiceRoleForAutoScaling": "exists",
    }


def test_an_earlier_versions_lock_table_is_reported_and_kept(aws):
    dynamodb = aws.client("dynamodb")
    dynamodb.create_table(
        TableName="dlr-terraform-locks",
        AttributeDefinitions=[{"AttributeName": "LockID", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "LockID", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    result = bootstrap_state(BACKEND, aws)
    assert result["dlr-terraform-locks"].startswith("exists, no longer used: state locks are S3 lock files")
    assert dynamodb.list_tables()["TableNames"] == ["dlr-terraform-locks"]


def test_creates_the_auto_scaling_service_linked_role_the_kms_key_policy_names(aws):
    bootstrap_state(BACKEND, aws)
    role = aws.client("iam").get_role(RoleName="AWSServiceRoleForAutoScaling")["Role"]
    assert role["Path"] == "/aws-service-role/autoscaling.amazonaws.com/"


def test_a_bucket_name_taken_by_another_account_is_one_line():
    session = boto3.Session(region_name="us-west-2")
    s3 = session.client("s3")
    stub = Stubber(s3)
    stub.add_client_error("head_bucket", service_error_code="403", http_status_code=403)
    stub.activate()

    class OneClient:
        def client(self, name, region_name=None):
            return s3 if name == "s3" else session.client(name, region_name=region_name)

    with pytest.raises(UserError) as err:
        bootstrap_state(BACKEND, OneClient())
    assert err.value.lines == [
        "state bucket dlr-terraform-state: the name is taken by another account; pass --state-bucket with a "
        "globally unique name (and the same to render/plan/up)"
    ]
