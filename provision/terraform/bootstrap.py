"""Create the Terraform state bucket and lock table (once per cluster, before the first `invoke up`).

Idempotent: what exists is left alone (and reported). The bucket is versioned, encrypted, private and TLS-only;
the table is on-demand, encrypted and has point-in-time recovery. It also makes sure the account has the Auto
Scaling service-linked role, which the cluster's KMS key policy names (on an account that never had an Auto
Scaling group the role does not exist yet, and creating a key policy naming it fails).
"""

from __future__ import annotations

import json

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from provision.errors import UserError
from provision.terraform.runner import CREDENTIALS_HINT
from provision.terraform.settings import Backend


def _tls_only(bucket: str) -> str:
    arn = f"arn:aws:s3:::{bucket}"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": [arn, f"{arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    )


def _bucket(s3, backend: Backend) -> str:
    name = backend.bucket
    try:
        s3.head_bucket(Bucket=name)
        state = "exists"
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        if code in ("403", "AccessDenied", "Forbidden"):
            raise UserError(
                f"state bucket {name}: the name is taken by another account; pass --state-bucket with a "
                "globally unique name (and the same to render/plan/up)"
            ) from None
        if code not in ("404", "NoSuchBucket", "NotFound"):
            raise
        args = {"Bucket": name}
        if backend.region != "us-east-1":
            args["CreateBucketConfiguration"] = {"LocationConstraint": backend.region}
        s3.create_bucket(**args)
        state = "created"
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_encryption(
        Bucket=name,
        ServerSideEncryptionConfiguration={
            "Rules": [
                {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}, "BucketKeyEnabled": True}
            ]
        },
    )
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_policy(Bucket=name, Policy=_tls_only(name))
    return state


def _table(dynamodb, backend: Backend) -> str:
    name = backend.lock_table
    try:
        dynamodb.describe_table(TableName=name)
        return "exists"
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "LockID", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "LockID", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        SSESpecification={"Enabled": True},
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 2, "MaxAttempts": 30})
    dynamodb.update_continuous_backups(
        TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    return "created"


AUTOSCALING_SERVICE = "autoscaling.amazonaws.com"
AUTOSCALING_ROLE = "AWSServiceRoleForAutoScaling"


def _autoscaling_role(iam) -> str:
    try:
        iam.get_role(RoleName=AUTOSCALING_ROLE)
        return "exists"
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") != "NoSuchEntity":
            raise
    try:
        iam.create_service_linked_role(AWSServiceName=AUTOSCALING_SERVICE)
    except ClientError as e:  # created meanwhile (e.g. by a first Auto Scaling group)
        if "has been taken" not in str(e.response.get("Error", {}).get("Message", "")):
            raise
        return "exists"
    return "created"


def bootstrap_state(backend: Backend, session: boto3.Session | None = None) -> dict[str, str]:
    """Create (or confirm) the state bucket, the lock table and the Auto Scaling service-linked role;
    returns ``{name: "created" | "exists"}``."""
    session = session or boto3.Session(region_name=backend.region)
    try:
        s3 = session.client("s3", region_name=backend.region)
        dynamodb = session.client("dynamodb", region_name=backend.region)
        iam = session.client("iam", region_name=backend.region)
        return {
            backend.bucket: _bucket(s3, backend),
            backend.lock_table: _table(dynamodb, backend),
            AUTOSCALING_ROLE: _autoscaling_role(iam),
        }
    except NoCredentialsError:
        raise UserError(CREDENTIALS_HINT) from None
    except ClientError as e:
        err = e.response.get("Error", {})
        raise UserError(
            f"bootstrap-state: AWS refused {e.operation_name}: {err.get('Code')}: {err.get('Message')}"
        ) from None
    except BotoCoreError as e:
        raise UserError(f"bootstrap-state: {e}") from None
