"""`invoke cost` and `invoke ssh-start` (provision/operations/cost.py) against moto: the budget Terraform makes
(the same notifications as the spec), its spend read back; the SSH machines found by their Name tags, a stopped
one started and waited for, one not in the spec refused in one line."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision.operations import cost


def _machines(spec, stopped=("gpu-1",)):
    ec2 = boto3.client("ec2", region_name="us-west-2")
    ids = {}
    for g in spec.researchers.ssh_machines:
        for i in range(1, g.count + 1):
            name = f"{g.name}-{i}"
            inst = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType=g.instance_type,
                                     TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                         {"Key": "Name", "Value": f"{spec.name}-ssh-{name}"}]}])["Instances"][0]  # fmt: skip
            ids[name] = inst["InstanceId"]
    ec2.stop_instances(InstanceIds=[ids[n] for n in stopped])
    return ids


def _budget(spec):
    b = spec.operations.budget
    notes = [{"Notification": {"NotificationType": kind, "ComparisonOperator": "GREATER_THAN", "Threshold": p,
                               "ThresholdType": "PERCENTAGE"},
              "Subscribers": [{"SubscriptionType": "SNS", "Address": "arn:aws:sns:us-west-2:123456789012:dlr-alerts"}]}
             for kind, ps in (("FORECASTED", b.forecast_alert_percent), ("ACTUAL", b.actual_alert_percent)) for p in ps]  # fmt: skip
    boto3.client("budgets", region_name="us-east-1").create_budget(
        AccountId="123456789012",
        Budget={"BudgetName": f"{spec.name}-monthly", "BudgetLimit": {"Amount": f"{b.monthly_usd:.2f}", "Unit": "USD"},
                "TimeUnit": "MONTHLY", "BudgetType": "COST"},
        NotificationsWithSubscribers=notes,
    )  # fmt: skip


@mock_aws
def test_a_stopped_machine_is_started_and_waited_for():
    spec = load_spec()
    ids = _machines(spec)
    m = cost.ssh_start(spec, "gpu-1", poll_s=0.1)
    assert m.state == "running" and m.instance_id == ids["gpu-1"] and m.dns == "gpu-1.ssh.research.internal"


@mock_aws
def test_a_name_not_in_the_spec_is_one_line():
    spec = load_spec()
    _machines(spec)
    with pytest.raises(
        UserError, match=r"ssh-start gpu-9: no such SSH machine; the spec's are gpu-1, gpu-2, cpu-1, cpu-2"
    ):
        cost.ssh_start(spec, "gpu-9")


@mock_aws
def test_a_machine_that_does_not_exist_yet_is_one_line():
    with pytest.raises(UserError, match="ssh-start gpu-1: it does not exist in us-west-2"):
        cost.ssh_start(load_spec(), "gpu-1")


@mock_aws
def test_the_report_shows_the_budget_and_which_machines_run():
    spec = load_spec()
    _machines(spec)
    _budget(spec)
    lines = cost.report(spec)
    assert lines[0].startswith("budget dlr-monthly: $50,000 a month; spent $0")
    assert lines[0].endswith("alerts at actual 100%, forecast 100%, forecast 80%")
    assert (
        lines[1].startswith("SSH machines: 3 of 4 running") and "each stops after 60 idle minutes" in lines[1]
    )
    gpu1 = next(line for line in lines if line.strip().startswith("gpu-1"))
    assert " stopped " in gpu1 and "g5.12xlarge" in gpu1


@mock_aws
def test_no_budget_made_yet_is_one_line():
    with pytest.raises(UserError, match="cannot read the budget dlr-monthly"):
        cost.budget(load_spec())
