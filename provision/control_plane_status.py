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


# --- nodes that never joined -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Unjoined:
    region: str
    instance: str
    group: str  # the Auto Scaling group, or "pod-gateway"
    age_s: float
    late: bool  # older than the spec's boot timeout: it never joined


def cluster_instances(
    cluster: Cluster, session: boto3.Session | None = None
) -> list[tuple[str, str, str, object]]:
    """(region, instance id, group, launch time) of every running instance that should become a Node: the
    instances of the cluster's Auto Scaling groups in every region and the pod gateways."""
    from clusterspec.names import CA_CLUSTER_TAG_PREFIX

    session = session or boto3.Session()
    found = []
    for region in cluster.spill_over_order:
        asg = session.client("autoscaling", region_name=region)
        ec2 = session.client("ec2", region_name=region)
        try:
            members: dict[str, str] = {}
            pages = asg.get_paginator("describe_auto_scaling_groups").paginate(
                Filters=[{"Name": "tag-key", "Values": [CA_CLUSTER_TAG_PREFIX + cluster.name]}]
            )
            for page in pages:
                for g in page["AutoScalingGroups"]:
                    for i in g.get("Instances", []):
                        if i.get("LifecycleState") in ("Pending", "InService"):
                            members[i["InstanceId"]] = g["AutoScalingGroupName"]
            filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
            described = []
            if members:
                described += ec2.describe_instances(InstanceIds=sorted(members), Filters=filters)[
                    "Reservations"
                ]
            if region == cluster.primary_region:
                gw = [{"Name": "tag:research.cluster/pod-gateway", "Values": [cluster.name]}, *filters]
                described += ec2.describe_instances(Filters=gw)["Reservations"]
        except (BotoCoreError, ClientError) as e:
            raise UserError(f"control-plane-status: cannot list the instances in {region}: {e}") from None
        for r in described:
            for inst in r["Instances"]:
                group = members.get(inst["InstanceId"], "pod-gateway")
                found.append((region, inst["InstanceId"], group, inst["LaunchTime"]))
    return found


def unjoined_nodes(cluster: Cluster, instances, node_provider_ids: list[str], now) -> list[Unjoined]:
    """The instances no Node names in its providerID (aws:///<zone>/<id>, docs/terraform.md "providerID")."""
    registered = {p.rstrip("/").rsplit("/", 1)[-1] for p in node_provider_ids if p.startswith("aws://")}
    out = []
    for region, instance, group, launched in instances:
        if instance in registered:
            continue
        age = (now - launched).total_seconds()
        out.append(Unjoined(region, instance, group, age, age > cluster.autoscaler.boot_timeout_s))
    return sorted(out, key=lambda u: (u.region, u.group, u.instance))


def node_provider_ids(kubeconfig: str | None) -> list[str] | None:
    """Every Node's spec.providerID, read with the operator's kubeconfig; None when there is none to read with."""
    import os

    from kubernetes import client, config

    path = kubeconfig or os.environ.get("KUBECONFIG")
    if not path or not os.path.exists(path):
        return None
    api = config.new_client_from_config(config_file=path)
    try:
        return [n.spec.provider_id or "" for n in client.CoreV1Api(api).list_node(_request_timeout=20).items]
    except Exception as e:  # noqa: BLE001 - any failure to read is one line, never a traceback
        raise UserError(f"control-plane-status: cannot list the nodes with {path}: {e}") from None
    finally:
        api.close()


def report_nodes(unjoined: list[Unjoined] | None, boot_timeout_s: int) -> tuple[list[str], int]:
    """Lines for the nodes and the exit status they add: 1 when one never joined, 3 while one is joining."""
    if unjoined is None:
        return ["nodes: not checked (no kubeconfig: run `invoke kubeconfig` and set KUBECONFIG)"], 0
    if not unjoined:
        return ["nodes: every cluster instance is a Node"], 0
    lines = []
    for u in unjoined:
        what = f"never joined (running {u.age_s / 60:.0f} min, boot timeout {boot_timeout_s // 60} min)" if u.late \
            else f"joining ({u.age_s:.0f} s)"  # fmt: skip
        lines.append(f"node {u.instance} ({u.region}, {u.group}): {what}; `journalctl -u cluster-join` on it")
    return lines, 1 if any(u.late for u in unjoined) else 3
