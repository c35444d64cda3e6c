"""Create the Terraform state bucket (once per cluster, before the first `invoke up`).

Idempotent: what exists is left alone (and reported). The bucket is versioned, encrypted, private and TLS-only.
State locks are lock files in the same bucket (the S3 backend's ``use_lockfile``), so no DynamoDB table is
needed; a lock table left by an earlier version is reported, not deleted. It also makes sure the account has
the Auto Scaling service-linked role, which the cluster's KMS key policy names (on an account that never had an Auto
Scaling group the role does not exist yet, and creating a key policy naming it fails).
"""

from __future__ import annotations

import json

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from clusterspec.errors import UserError
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


def _legacy_table(dynamodb, backend: Backend) -> str | None:
    """The DynamoDB lock table of earlier versions: reported, never deleted here (a checkout that predates the
    move to S3 lock files still locks with it; delete it once none is in use)."""
    try:
        dynamodb.describe_table(TableName=backend.legacy_lock_table)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise
    return (
        "exists, no longer used: state locks are S3 lock files (use_lockfile); delete the table once no "
        "checkout older than this one runs Terraform"
    )


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
    """Create (or confirm) the state bucket and the Auto Scaling service-linked role; returns
    ``{name: "created" | "exists" | what to do}``, including an earlier version's DynamoDB lock table if any."""
    session = session or boto3.Session(region_name=backend.region)
    try:
        s3 = session.client("s3", region_name=backend.region)
        dynamodb = session.client("dynamodb", region_name=backend.region)
        iam = session.client("iam", region_name=backend.region)
        result = {backend.bucket: _bucket(s3, backend), AUTOSCALING_ROLE: _autoscaling_role(iam)}
        legacy = _legacy_table(dynamodb, backend)
        if legacy:
            result[backend.legacy_lock_table] = legacy
        return result
    except NoCredentialsError:
        raise UserError(CREDENTIALS_HINT) from None
    except ClientError as e:
        err = e.response.get("Error", {})
        raise UserError(
            f"bootstrap-state: AWS refused {e.operation_name}: {err.get('Code')}: {err.get('Message')}"
        ) from None
    except BotoCoreError as e:
        raise UserError(f"bootstrap-state: {e}") from None
