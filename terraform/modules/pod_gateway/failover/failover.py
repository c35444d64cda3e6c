"""Pod-network gateway failover: keep every route table's pod-CIDR route on one healthy gateway.

Runs as a Lambda function every minute and on each gateway's EC2 state change (terraform/modules/pod_gateway).
A gateway is healthy when it is ``running`` and neither EC2 status check (system, instance) is ``impaired``
(DescribeInstanceStatus). The active gateway is the one most tables already point to, kept while it is healthy
(no flapping); otherwise the healthy gateway with the lowest instance id takes over. Every table whose route
targets anything else, or is a blackhole, or is missing, is moved (ReplaceRoute) or created (CreateRoute).
With no healthy gateway nothing changes: a route is never deleted.

Pure decision (:func:`decide`) apart from the EC2 calls (:func:`observe`, :func:`apply`), so it is tested
against moto and by cases.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass

GATEWAY_TAG = "research.cluster/pod-gateway"


@dataclass(frozen=True)
class Gateway:
    instance_id: str
    eni: str
    healthy: bool


@dataclass(frozen=True)
class Change:
    route_table_id: str
    action: str  # "replace" or "create"
    eni: str
    previous: str | None


def observe(
    ec2, cluster: str, tables: list[str], pod_cidr: str
) -> tuple[list[Gateway], dict[str, str | None]]:
    """The cluster's gateways and, per table, the ENI its pod route targets (None: missing or blackhole)."""
    reservations = ec2.describe_instances(
        Filters=[
            {"Name": f"tag:{GATEWAY_TAG}", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
        ]
    )["Reservations"]
    instances = [i for r in reservations for i in r["Instances"]]
    ids = [i["InstanceId"] for i in instances]
    statuses = {}
    if ids:
        for s in ec2.describe_instance_status(InstanceIds=ids, IncludeAllInstances=True)["InstanceStatuses"]:
            statuses[s["InstanceId"]] = s
    gateways = []
    for inst in instances:
        s = statuses.get(inst["InstanceId"], {})
        impaired = "impaired" in (
            s.get("InstanceStatus", {}).get("Status"),
            s.get("SystemStatus", {}).get("Status"),
        )
        running = inst["State"]["Name"] == "running"
        eni = next(
            (
                n["NetworkInterfaceId"]
                for n in inst.get("NetworkInterfaces", [])
                if n["Attachment"]["DeviceIndex"] == 0
            ),
            "",
        )
        gateways.append(Gateway(inst["InstanceId"], eni, running and not impaired and bool(eni)))
    targets: dict[str, str | None] = {t: None for t in tables}
    if tables:
        for rt in ec2.describe_route_tables(RouteTableIds=tables)["RouteTables"]:
            for route in rt["Routes"]:
                if route.get("DestinationCidrBlock") == pod_cidr and route.get("State") != "blackhole":
                    targets[rt["RouteTableId"]] = route.get("NetworkInterfaceId")
    return gateways, targets


def decide(gateways: list[Gateway], targets: dict[str, str | None]) -> tuple[Gateway | None, list[Change]]:
    healthy = {g.eni: g for g in gateways if g.healthy}
    if not healthy:
        return None, []
    votes = Counter(eni for eni in targets.values() if eni in healthy)
    if votes:
        top = max(votes.values())
        active = healthy[min(e for e, n in votes.items() if n == top)]
    else:
        active = min(healthy.values(), key=lambda g: g.instance_id)
    changes = [
        Change(table, "replace" if current else "create", active.eni, current)
        for table, current in sorted(targets.items())
        if current != active.eni
    ]
    return active, changes


def apply(ec2, pod_cidr: str, changes: list[Change]) -> None:
    for c in changes:
        args = {
            "RouteTableId": c.route_table_id,
            "DestinationCidrBlock": pod_cidr,
            "NetworkInterfaceId": c.eni,
        }
        if c.action == "create":
            try:
                ec2.create_route(**args)
                continue
            except ec2.exceptions.ClientError as e:  # a blackhole route exists: replace it
                if e.response["Error"]["Code"] != "RouteAlreadyExists":
                    raise
        ec2.replace_route(**args)


def run(ec2, cluster: str, tables: list[str], pod_cidr: str) -> dict:
    gateways, targets = observe(ec2, cluster, tables, pod_cidr)
    active, changes = decide(gateways, targets)
    apply(ec2, pod_cidr, changes)
    return {
        "active": active.instance_id if active else None,
        "healthy": sorted(g.instance_id for g in gateways if g.healthy),
        "moved": [{"table": c.route_table_id, "from": c.previous, "to": c.eni} for c in changes],
        "error": None if active else "no healthy pod gateway: routes left as they are",
    }


def handler(event, context):  # Lambda entry point
    import boto3

    result = run(
        boto3.client("ec2"),
        os.environ["CLUSTER"],
        [t for t in os.environ["ROUTE_TABLE_IDS"].split(",") if t],
        os.environ["POD_CIDR"],
    )
    print(json.dumps(result))
    return result
