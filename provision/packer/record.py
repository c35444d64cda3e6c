"""Record a bake where Terraform and Chef pick it up.

A real bake writes ``build/ami/<region>.json`` for every region the AMI was copied to (Terraform reads ``ami_id``),
the SSM parameter ``/<cluster>/ami/gpu-worker`` in each, and ``build/ami/package-lock.json``: the source AMI and
every installed package at its version (``dpkg-query -W`` at the end of the bake), which the physical servers
install from. A local bake against moto records under ``build/ami-local/`` instead: its AMIs exist only in that
moto server, so they must never reach a real Terraform render or a Chef converge.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError

LOCK_FILE = "package-lock.json"


def ssm_parameter_name(cluster: str) -> str:
    return f"/{cluster}/ami/gpu-worker"


def record_dir(build_dir: Path, *, local: bool) -> Path:
    return build_dir / ("ami-local" if local else "ami")


def parse_package_lock(text: str, source: str) -> dict[str, str]:
    """``name version`` lines (``dpkg-query -W -f '${binary:Package} ${Version}\\n'``) as a mapping."""
    packages: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise UserError(f"{source}:{n}: expected 'package version', got {line.strip()!r}")
        name = parts[0].removesuffix(":amd64")
        packages[name] = parts[1]
    if not packages:
        raise UserError(f"{source}: the package lock is empty; the bake's dpkg-query step did not run")
    return packages


def _ssm(region: str, endpoint_url: str | None, keys: dict[str, str]):
    return boto3.client(
        "ssm",
        region_name=region,
        endpoint_url=endpoint_url,
        aws_access_key_id=keys.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=keys.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=keys.get("AWS_SESSION_TOKEN"),
    )


def record_bake(
    cluster: str,
    bake_region: str,
    amis: dict[str, str],
    name: str,
    out_dir: Path,
    *,
    source_ami: str | None,
    package_lock: dict[str, str] | None,
    endpoint_url: str | None = None,
    credentials: dict[str, str] | None = None,
) -> dict:
    """Write one record per region, the package lock and the SSM parameters; the bake region's record, with
    the parameter's value read back."""
    created = datetime.now(UTC).isoformat(timespec="seconds")
    parameter = ssm_parameter_name(cluster)
    out_dir.mkdir(parents=True, exist_ok=True)
    stored = {}
    for region, ami_id in sorted(amis.items()):
        try:
            ssm = _ssm(region, endpoint_url, credentials or {})
            ssm.put_parameter(
                Name=parameter,
                Value=ami_id,
                Type="String",
                Overwrite=True,
                Description="GPU worker AMI baked by `invoke bake-ami`",
            )
            stored[region] = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
        except (BotoCoreError, ClientError) as e:
            raise UserError(f"SSM {parameter} in {region}: cannot record AMI {ami_id}: {e}") from None
    lock = {
        "ami_name": name,
        "amis": dict(sorted(amis.items())),
        "bake_region": bake_region,
        "source_ami": source_ami,
        "created_at": created,
        "packages": dict(sorted((package_lock or {}).items())),
    }
    if package_lock is not None:
        (out_dir / LOCK_FILE).write_text(json.dumps(lock, indent=2) + "\n")
    records = {}
    for region, ami_id in amis.items():
        record = {
            "ami_id": ami_id,
            "region": region,
            "name": name,
            "created_at": created,
            "bake_region": bake_region,
            "source_ami": source_ami,
            "package_lock": LOCK_FILE if package_lock is not None else None,
        }
        if endpoint_url:
            record["ec2_endpoint"] = endpoint_url  # a local bake: this AMI exists only in that moto server
        path = out_dir / f"{region}.json"
        path.write_text(json.dumps(record, indent=2) + "\n")
        records[region] = {
            **record,
            "file": str(path),
            "ssm_parameter": parameter,
            "ssm_value": stored[region],
        }
    return records[bake_region] | {"regions": sorted(amis)}


def load_package_lock(ami_dir: Path) -> dict:
    """``build/ami/package-lock.json``; UserError naming the file and `invoke bake-ami` when it is missing."""
    path = ami_dir / LOCK_FILE
    if not path.exists():
        raise UserError(f"{path}: no package lock; bake the image first (`invoke bake-ami`)")
    try:
        data = json.loads(path.read_text())
        packages = data["packages"]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path}: not a package lock written by `invoke bake-ami`; bake again") from None
    if not isinstance(packages, dict) or not packages:
        raise UserError(f"{path}: the package lock lists no package; bake again")
    return data
