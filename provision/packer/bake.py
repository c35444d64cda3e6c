"""Bake the GPU worker AMI: spec -> Packer variables -> packer build (AWS, or a local moto server) -> record."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import boto3

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision.packer import moto_local, record, runner, template, variables

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
AWS_BUILD = "amazon-ebs.gpu-worker"  # SSH communicator: runs every script, then check.sh
LOCAL_BUILD = "amazon-ebs.local"  # no communicator: the API calls only; see docs/images.md
_SOURCE_AMI = re.compile(r"Found Image ID: (ami-[0-9a-f]+)")


def bake(
    cluster: Cluster,
    region: str,
    *,
    local: bool = False,
    build_dir: Path = BUILD,
    on_event: Callable[[runner.Event], None] = lambda e: None,
    ssh_from: str | None = None,
) -> dict:
    """Build the image in ``region`` (or against moto when ``local``) and record its AMI id."""
    exe = runner.packer_path()
    version = runner.packer_version(exe)
    work = build_dir / "packer" / region
    if not local and version < (1, 7, 0):
        raise UserError(f"{exe}: Packer {'.'.join(map(str, version))} cannot require IMDSv2 on the build instance "
                        "(metadata_options, Packer 1.7 and later): install a newer Packer for a real bake; "
                        "Packer 1.6 serves `invoke bake-ami --local` only")  # fmt: skip
    staged = template.stage(work / "template", with_plugins=version >= (1, 7, 0))
    if not local:
        cidr = variables.ssh_source(ssh_from) if ssh_from else variables.bake_host_cidr()
        from provision import lab_images

        blocker = lab_images.prepull_blocker(cluster)
        if blocker:
            print(f"warning: this image goes without the standard image's pre-pull: {blocker}; bake again after "
                  "`invoke push-standard-image`", file=sys.stderr)  # fmt: skip
        return _build(cluster, region, exe, staged, work, build_dir, AWS_BUILD, None, {}, on_event, (cidr,),
                      prepull=blocker is None)  # fmt: skip
    from provision import lab_images

    lab_images.use_local_registry(
        cluster
    )  # the embedded account's ECR names the standard image (no script runs)
    with moto_local.moto_server(cluster.software.ubuntu) as endpoint:
        return _build(
            cluster, region, exe, staged, work, build_dir, LOCAL_BUILD, endpoint,
            moto_local.FAKE_CREDENTIALS, on_event,
        )  # fmt: skip


def _build(cluster, region, exe, staged, work, build_dir, only, endpoint, env, on_event,
           ssh_source_cidrs: tuple[str, ...] = ("127.0.0.1/32",), prepull: bool = True) -> dict:  # fmt: skip
    lock_path = work / "package-lock"
    lock_path.unlink(missing_ok=True)
    values = variables.packer_variables(
        cluster,
        region,
        ec2_endpoint=endpoint or "",
        package_lock_path=str(lock_path),
        ssh_source_cidrs=ssh_source_cidrs,
        prepull=prepull,
    )
    var_file = variables.write_var_file(values, work / "variables.pkrvars.json")
    result = runner.build(staged, var_file, only, executable=exe, env=env, on_event=on_event)
    log = work / "packer.log"
    log.write_text("\n".join(result.log) + "\n")
    ami = result.amis.get(region)
    if result.returncode != 0 or not ami:
        why = _first_problem(result.errors) or f"exit status {result.returncode}"
        raise UserError(f"packer build {only} in {region} failed: {why} (full log: {log})")
    expected = {region, *values["ami_regions"]}
    if set(result.amis) != expected:
        raise UserError(
            f"packer build {only}: AMIs in {', '.join(sorted(result.amis))}, expected {', '.join(sorted(expected))}"
            f" (full log: {log})"
        )
    source = next((m.group(1) for line in result.log if (m := _SOURCE_AMI.search(line))), None)
    if endpoint:
        for r, image in result.amis.items():
            _check_local_image(image, values["ami_name"], r, endpoint, env)
        lock = None  # no communicator, no dpkg-query: a local bake has no package lock
    else:
        if not lock_path.exists():
            raise UserError(
                f"packer build {only}: no package lock downloaded to {lock_path} (full log: {log})"
            )
        lock = record.parse_package_lock(lock_path.read_text(), str(lock_path))
    return record.record_bake(
        cluster.name,
        region,
        result.amis,
        values["ami_name"],
        record.record_dir(build_dir, local=bool(endpoint)),
        source_ami=source,
        package_lock=lock,
        endpoint_url=endpoint,
        credentials=env,
    ) | {"log": str(log), "packer": ".".join(map(str, runner.packer_version(exe)))}


def _check_local_image(ami: str, name: str, region: str, endpoint: str, env: dict) -> None:
    """The moto server must hold the AMI Packer reported in ``region``, under the spec's name. (moto's CopyImage
    ignores ``Encrypted``, so encryption is not provable here: the template test checks ``encrypt_boot``.)"""
    ec2 = boto3.client(
        "ec2",
        region_name=region,
        endpoint_url=endpoint,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )
    images = ec2.describe_images(ImageIds=[ami])["Images"]
    if not images or images[0].get("Name") != name:
        raise UserError(f"local bake: {endpoint} has no image {ami} named {name} in {region}")


def _first_problem(errors: list[str]) -> str:
    """Packer's errors read ``Error: 1 error(s) occurred:`` then ``* <the problem>``: keep the problems."""
    lines = [line.strip() for e in errors for line in e.splitlines() if line.strip()]
    problems = [line.removeprefix("* ") for line in lines if line.startswith("* ")]
    return "; ".join(problems) if problems else (lines[0] if lines else "")
