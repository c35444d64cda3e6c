"""`invoke cost` and `invoke ssh-start` (docs/operations.md, "Cost").

The monthly budget (terraform/modules/budget) is AWS's; this reads its actual and forecast spend
(DescribeBudget). The SSH machines, two of them GPU machines that ran around the clock, now stop themselves when
idle (terraform/modules/ssh_machines/scripts/idle_stop.sh); ``ssh_start`` starts one again and waits until it
runs, and the report shows which run now and what they cost an hour.
"""

from __future__ import annotations

from dataclasses import dataclass

import boto3
from botocore.exceptions import BotoCoreError, ClientError, WaiterError

from clusterspec import catalog
from clusterspec.errors import UserError
from clusterspec.spec import Cluster


@dataclass(frozen=True)
class Machine:
    name: str  # <group>-<n>, as lab ssh-config names it
    instance_id: str
    state: str
    instance_type: str
    dns: str

    def price(self, region: str) -> float:
        try:
            return catalog.instance_type(self.instance_type).price_in(region) or 0.0
        except KeyError:
            return 0.0


def _session(cluster: Cluster, session: boto3.Session | None) -> boto3.Session:
    return session or boto3.Session(region_name=cluster.primary_region)


def machines(cluster: Cluster, session: boto3.Session | None = None) -> list[Machine]:
    """The SSH machines of the spec that exist (terraform/modules/ssh_machines: Name <cluster>-ssh-<group>-<n>)."""
    ec2 = _session(cluster, session).client("ec2", region_name=cluster.primary_region)
    wanted = {f"{cluster.name}-ssh-{g.name}-{i}": f"{g.name}-{i}"
              for g in cluster.researchers.ssh_machines for i in range(1, g.count + 1)}  # fmt: skip
    if not wanted:
        return []
    try:
        pages = ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "tag:Name", "Values": sorted(wanted)},
                     {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}]
        )  # fmt: skip
        found = [i for p in pages for r in p["Reservations"] for i in r["Instances"]]
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"cannot list the SSH machines: {e}".splitlines()[0]) from None
    out = []
    for i in found:
        tag = next(t["Value"] for t in i.get("Tags", []) if t["Key"] == "Name")
        name = wanted[tag]
        out.append(Machine(name, i["InstanceId"], i["State"]["Name"], i["InstanceType"],
                           f"{name}.ssh.{cluster.domain}"))  # fmt: skip
    return sorted(out, key=lambda m: m.name)


def ssh_start(
    cluster: Cluster, name: str, session: boto3.Session | None = None, wait: bool = True, poll_s: float = 5
) -> Machine:
    """Start the SSH machine NAME (``gpu-1``) and wait until it runs; a running one is left as it is."""
    known = [f"{g.name}-{i}" for g in cluster.researchers.ssh_machines for i in range(1, g.count + 1)]
    if name not in known:
        raise UserError(f"ssh-start {name}: no such SSH machine; the spec's are {', '.join(known) or 'none'}")
    found = {m.name: m for m in machines(cluster, session)}
    if name not in found:
        raise UserError(
            f"ssh-start {name}: it does not exist in {cluster.primary_region} (is the primary region up?)"
        )
    m = found[name]
    if m.state in ("running", "pending") and not wait:
        return m
    ec2 = _session(cluster, session).client("ec2", region_name=cluster.primary_region)
    try:
        if m.state == "stopping":
            ec2.get_waiter("instance_stopped").wait(
                InstanceIds=[m.instance_id], WaiterConfig={"Delay": poll_s}
            )
        if m.state != "running":
            ec2.start_instances(InstanceIds=[m.instance_id])
        if wait:
            ec2.get_waiter("instance_running").wait(
                InstanceIds=[m.instance_id], WaiterConfig={"Delay": poll_s}
            )
    except (BotoCoreError, ClientError, WaiterError) as e:
        raise UserError(f"ssh-start {name}: {e}".splitlines()[0]) from None
    return next(x for x in machines(cluster, session) if x.name == name)


def budget(cluster: Cluster, session: boto3.Session | None = None) -> dict | None:
    """The budget's limit, actual and forecast spend (terraform/modules/budget: <cluster>-monthly); None when the
    spec has no budget."""
    if cluster.operations.budget is None:
        return None
    s = _session(cluster, session)
    try:
        account = s.client("sts", region_name=cluster.primary_region).get_caller_identity()["Account"]
        b = s.client("budgets", region_name="us-east-1").describe_budget(
            AccountId=account, BudgetName=f"{cluster.name}-monthly"
        )["Budget"]
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"cannot read the budget {cluster.name}-monthly (invoke up --region global makes it): {e}"
                        .splitlines()[0]) from None  # fmt: skip
    spend = b.get("CalculatedSpend") or {}

    def amount(d):
        return float((d or {}).get("Amount") or 0)

    return {
        "limit": amount(b.get("BudgetLimit")),
        "actual": amount(spend.get("ActualSpend")),
        "forecast": amount(spend.get("ForecastedSpend")),
        "notifications": sorted({*(f"forecast {p}%" for p in cluster.operations.budget.forecast_alert_percent),
                                 *(f"actual {p}%" for p in cluster.operations.budget.actual_alert_percent)}),
    }  # fmt: skip


def report(cluster: Cluster, session: boto3.Session | None = None) -> list[str]:
    lines = []
    b = budget(cluster, session)
    if b is None:
        lines.append("no budget in the spec (operations.budget)")
    else:
        share = (lambda v: f" ({100 * v / b['limit']:.0f}%)") if b["limit"] else (lambda v: "")
        lines.append(f"budget {cluster.name}-monthly: ${b['limit']:,.0f} a month; spent ${b['actual']:,.0f}"
                     f"{share(b['actual'])}, forecast ${b['forecast']:,.0f}{share(b['forecast'])}; alerts at "
                     + ", ".join(b["notifications"]))  # fmt: skip
    ms = machines(cluster, session)
    region = cluster.primary_region
    running = [m for m in ms if m.state in ("running", "pending")]
    idle = cluster.operations.ssh_idle_stop_min
    lines.append(f"SSH machines: {len(running)} of {len(ms)} running, ${sum(m.price(region) for m in running):.2f}"
                 f" an hour" + (f"; each stops after {idle} idle minutes" if idle else "; they never stop"))  # fmt: skip
    for m in ms:
        lines.append(f"  {m.name:10} {m.state:9} {m.instance_type:14} ${m.price(region):6.2f}/h  {m.dns}")
    return lines
