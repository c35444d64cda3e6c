"""Running a script on the cluster's instances through SSM Run Command (``AWS-RunShellScript``), the operator
access path (Session Manager's agent on every instance; no SSH key, no open port). One call per step, on the
instances given, waited for with a deadline; every instance's exit code and output come back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError
from clusterspec.spec import Cluster

CONTROL_PLANE_TAG = "research.cluster/control-plane"  # terraform/modules/control_plane tags its members so
DONE = {"Success", "Failed", "Cancelled", "TimedOut", "DeliveryTimedOut", "ExecutionTimedOut", "Undeliverable",
        "Terminated", "InvalidPlatform", "AccessDenied"}  # fmt: skip


@dataclass(frozen=True)
class Member:
    """A control-plane instance: its index (from its Name tag, ``<cluster>-control-plane-<i>``), id and address."""

    index: int
    instance_id: str
    private_ip: str


@dataclass(frozen=True)
class Result:
    instance_id: str
    status: str  # SSM's: Success, Failed, TimedOut, ...
    code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.status == "Success" and self.code == 0


def _aws(what: str, e: Exception) -> UserError:
    return UserError(f"{what}: {e}".splitlines()[0])


def control_plane_members(cluster: Cluster, session: boto3.Session | None = None) -> list[Member]:
    """The running control-plane members of the primary region, by index."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    ec2 = session.client("ec2", region_name=cluster.primary_region)
    try:
        pages = ec2.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{CONTROL_PLANE_TAG}", "Values": [cluster.name]},
                {"Name": "instance-state-name", "Values": ["running"]},
            ]
        )
        found = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
    except (BotoCoreError, ClientError) as e:
        raise _aws("cannot list the control-plane instances", e) from None
    out = []
    for i in found:
        name = next((t["Value"] for t in i.get("Tags", []) if t["Key"] == "Name"), "")
        index = int(name.rsplit("-", 1)[-1]) if name.rsplit("-", 1)[-1].isdigit() else 999
        out.append(Member(index, i["InstanceId"], i.get("PrivateIpAddress", "")))
    if not out:
        raise UserError(
            f"no running control-plane instance of {cluster.name} in {cluster.primary_region} "
            f"(tag {CONTROL_PLANE_TAG}={cluster.name}); is the primary region up?"
        )
    return sorted(out, key=lambda m: (m.index, m.instance_id))


class SsmRunner:
    """``run(instance_ids, script, timeout_s)`` through SSM Run Command in one region."""

    def __init__(self, region: str, session: boto3.Session | None = None, poll_s: float = 2.0,
                 sleep: Callable[[float], None] = time.sleep):  # fmt: skip
        self.ssm = (session or boto3.Session(region_name=region)).client("ssm", region_name=region)
        self.poll_s, self.sleep = poll_s, sleep

    def run(
        self, instance_ids: list[str], script: str, timeout_s: int = 600, comment: str = ""
    ) -> dict[str, Result]:
        try:
            command = self.ssm.send_command(
                InstanceIds=list(instance_ids),
                DocumentName="AWS-RunShellScript",
                Comment=comment[:100],
                TimeoutSeconds=60,  # to reach the instance
                Parameters={"commands": [script], "executionTimeout": [str(timeout_s)]},
            )["Command"]["CommandId"]
        except (BotoCoreError, ClientError) as e:
            raise _aws(
                "SSM SendCommand failed (is the operator allowed ssm:SendCommand, the agent online?)", e
            ) from None
        deadline = time.monotonic() + timeout_s + 120
        results: dict[str, Result] = {}
        while len(results) < len(instance_ids):
            for iid in instance_ids:
                if iid in results:
                    continue
                try:
                    inv = self.ssm.get_command_invocation(CommandId=command, InstanceId=iid)
                except ClientError as e:
                    if e.response.get("Error", {}).get("Code") == "InvocationDoesNotExist":
                        continue  # not delivered yet
                    raise _aws(f"SSM GetCommandInvocation {iid}", e) from None
                if inv["Status"] in DONE:
                    results[iid] = Result(iid, inv["Status"], int(inv.get("ResponseCode", -1)),
                                          inv.get("StandardOutputContent", ""), inv.get("StandardErrorContent", ""))  # fmt: skip
            if len(results) < len(instance_ids):
                if time.monotonic() > deadline:
                    missing = ", ".join(i for i in instance_ids if i not in results)
                    raise UserError(
                        f"SSM command {command} did not finish on {missing} within {timeout_s + 120} s"
                    )
                self.sleep(self.poll_s)
        return results
