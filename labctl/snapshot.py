"""The code snapshot in the cluster's bucket: ``s3://<results bucket>/<user>/.lab/code/<sha256>.tar.gz``.

Content-addressed: the key is the tar's SHA-256, so the same code is uploaded once (a HEAD finds it) and a job's
init container checks what it fetched against the name it asked for (labctl/unpack.py). The prefix is the
researcher's own: their pods' role (IRSA, terraform/modules/service_account_issuer) reads and writes
``results/<user>/*`` and nothing else of the bucket. The upload uses the researcher's AWS credentials (the same as
for ECR); a local cluster's moto server takes any.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from labctl.context import Snapshot
from labctl.errors import LabError


@dataclass(frozen=True)
class Stored:
    url: str
    uploaded: bool  # False: the bucket had it already
    size: int


def key(user: str, digest: str) -> str:
    return f"{user}/.lab/code/{digest}.tar.gz"


def url(bucket: str, user: str, digest: str) -> str:
    return f"s3://{bucket}/{key(user, digest)}"


def _client(region: str | None, endpoint: str | None):
    import boto3

    kwargs = {"region_name": region or os.environ.get("AWS_REGION") or "us-west-2"}
    endpoint = os.environ.get("LAB_S3_ENDPOINT") or endpoint
    if endpoint:
        kwargs["endpoint_url"] = endpoint
        if boto3.session.Session().get_credentials() is None:  # a local cluster's moto server takes any key
            kwargs |= {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    return boto3.client("s3", **kwargs)


def exists(bucket: str, user: str, snap: Snapshot, region: str | None, endpoint: str | None) -> bool:
    import botocore

    try:
        _client(region, endpoint).head_object(Bucket=bucket, Key=key(user, snap.digest))
        return True
    except botocore.exceptions.ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise LabError(f"s3://{bucket}: {e}") from None
    except botocore.exceptions.BotoCoreError as e:
        raise LabError(
            f"s3://{bucket}: {e}; check your AWS credentials (aws sts get-caller-identity)"
        ) from None


def upload(bucket: str, user: str, snap: Snapshot, region: str | None, endpoint: str | None) -> Stored:
    import botocore

    where = url(bucket, user, snap.digest)
    if exists(bucket, user, snap, region, endpoint):
        return Stored(where, False, 0)
    blob = snap.gzipped()
    try:
        _client(region, endpoint).put_object(
            Bucket=bucket, Key=key(user, snap.digest), Body=blob, ContentType="application/gzip",
            Metadata={"sha256": snap.digest, "git": snap.git or "none"},
        )  # fmt: skip
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
        raise LabError(f"uploading the code to {where}: {e}") from None
    return Stored(where, True, len(blob))
