"""`invoke control-plane-status`: what each control-plane member reported while bootstrapping.

Every member writes one JSON line to the SSM String ``/<cluster>/control-plane/status/member-<i>`` (state,
instance, address, attempt, time, message; written by terraform/modules/control_plane/scripts/bootstrap.sh,
never a secret) and member 0 marks ``/<cluster>/control-plane/init`` once ``kubeadm init`` succeeded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError
from clusterspec.spec import Cluster

HEALTHY = {"ready"}
IN_PROGRESS = {"initializing", "waiting", "joining", "retrying", "healing"}


@dataclass(frozen=True)
class Member:
    index: int
    state: str
    instance: str
    ip: str
    attempt: int
    time: str
    message: str


def _parameters(ssm, path: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=False):
        found |= {p["Name"]: p["Value"] for p in page["Parameters"]}
    return found


def read_status(cluster: Cluster, session: boto3.Session | None = None) -> tuple[str | None, list[Member]]:
    """The init state and one entry per expected member (state ``missing`` when a member never reported)."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    ssm = session.client("ssm", region_name=cluster.primary_region)
    prefix = f"/{cluster.name}/control-plane"
    try:
        reported = _parameters(ssm, f"{prefix}/status")
        try:
            init = ssm.get_parameter(Name=f"{prefix}/init")["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            init = None
    except (BotoCoreError, ClientError) as e:
        raise UserError(
            f"control-plane-status: cannot read {prefix}/ in {cluster.primary_region}: {e}"
        ) from None
    members = []
    for i in range(cluster.kubernetes.control_plane.count):
        raw = reported.get(f"{prefix}/status/member-{i}")
        try:
            d = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            d = {"state": "unreadable", "message": raw}
        members.append(
            Member(
                index=i,
                state=str(d.get("state", "missing")),
                instance=str(d.get("instance", "-")),
                ip=str(d.get("ip", "-")),
                attempt=int(d.get("attempt", 0) or 0),
                time=str(d.get("time", "-")),
                message=str(d.get("message", "never reported (instance not started, or no SSM access)")),
            )
        )
    return init, members


def report(init: str | None, members: list[Member]) -> tuple[list[str], int]:
    """Lines to print and the exit status: 0 all ready, 1 any failed or missing, 3 still in progress."""
    lines = [f"init: {init or 'no init parameter (control plane not applied)'}"]
    for m in members:
        lines.append(
            f"member-{m.index}: {m.state:<12} {m.instance:<20} {m.ip:<15} attempt {m.attempt}  {m.time}  {m.message}"
        )
    states = {m.state for m in members}
    if states <= HEALTHY and init and init.startswith("initialized"):
        return lines, 0
    if states & IN_PROGRESS and not states - IN_PROGRESS - HEALTHY:
        return lines, 3
    return lines, 1
