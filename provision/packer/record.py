"""Record a baked AMI where Terraform picks it up: ``build/ami/<region>.json`` and the SSM parameter."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from provision.errors import UserError


def ssm_parameter_name(cluster: str) -> str:
    return f"/{cluster}/ami/gpu-worker"


def record_ami(
    cluster: str,
    region: str,
    ami_id: str,
    name: str,
    out_dir: Path,
    *,
    endpoint_url: str | None = None,
    credentials: dict[str, str] | None = None,
) -> dict:
    """Write the AMI file and the SSM parameter; return the record, with the parameter's value read back."""
    record = {
        "ami_id": ami_id,
        "region": region,
        "name": name,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if endpoint_url:
        record["ec2_endpoint"] = endpoint_url  # a local bake: this AMI exists only in that moto server
    parameter = ssm_parameter_name(cluster)
    keys = credentials or {}
    ssm = boto3.client(
        "ssm",
        region_name=region,
        endpoint_url=endpoint_url,
        aws_access_key_id=keys.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=keys.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=keys.get("AWS_SESSION_TOKEN"),
    )
    try:
        ssm.put_parameter(
            Name=parameter,
            Value=ami_id,
            Type="String",
            Overwrite=True,
            Description="GPU worker AMI baked by `invoke bake-ami`",
        )
        stored = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"SSM {parameter} in {region}: cannot record AMI {ami_id}: {e}") from None
    out = out_dir / f"{region}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    return {**record, "file": str(out), "ssm_parameter": parameter, "ssm_value": stored}
