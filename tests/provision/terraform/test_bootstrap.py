"""The state bucket and lock table, against moto (no AWS)."""

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from provision.errors import UserError
from provision.terraform.bootstrap import bootstrap_state
from provision.terraform.settings import Backend

BACKEND = Backend.for_cluster("dlr", "us-west-2")


@pytest.fixture
def aws():
    with mock_aws():
        yield boto3.Session(region_name="us-west-2")


def test_creates_a_private_versioned_encrypted_bucket_and_a_lock_table(aws):
    assert bootstrap_state(BACKEND, aws) == {
        "dlr-terraform-state": "created",
        "dlr-terraform-locks": "created",
        "AWSServiceRoleForAutoScaling": "created",
    }
    s3 = aws.client("s3")
    assert s3.get_bucket_versioning(Bucket=BACKEND.bucket)["Status"] == "Enabled"
    rule = s3.get_bucket_encryption(Bucket=BACKEND.bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    block = s3.get_public_access_block(Bucket=BACKEND.bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values())
    assert "aws:SecureTransport" in s3.get_bucket_policy(Bucket=BACKEND.bucket)["Policy"]
    table = aws.client("dynamodb").describe_table(TableName=BACKEND.lock_table)["Table"]
    assert table["KeySchema"] == [{"AttributeName": "LockID", "KeyType": "HASH"}]
    assert s3.get_bucket_location(Bucket=BACKEND.bucket)["LocationConstraint"] == "us-west-2"


def test_is_idempotent(aws):
    bootstrap_state(BACKEND, aws)
    assert bootstrap_state(BACKEND, aws) == {
        "dlr-terraform-state": "exists",
        "dlr-terraform-locks": "exists",
        "AWSServiceRoleForAutoScaling": "exists",
    }


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
