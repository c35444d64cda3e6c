"""The embedded AWS reads back what it was given (autoscaler/demo/aws_readback.py): each field plain moto drops
is dropped without the patch (so the test can fail) and answered as AWS answers it with it."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from autoscaler.demo import aws_readback


@pytest.fixture(params=[False, True], ids=["plain-moto", "embedded"])
def ec2(request, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    if request.param:
        aws_readback.install()
    try:
        with mock_aws():
            yield request.param, boto3.client("ec2", region_name="us-west-2")
    finally:
        aws_readback.uninstall()


def test_a_customer_gateway_keeps_its_device_name(ec2) -> None:
    patched, client = ec2
    made = client.create_customer_gateway(Type="ipsec.1", IpAddress="198.51.100.7", BgpAsn=65010,
                                          DeviceName="lab-strongswan")["CustomerGateway"]  # fmt: skip
    (read,) = client.describe_customer_gateways(CustomerGatewayIds=[made["CustomerGatewayId"]])[
        "CustomerGateways"
    ]
    assert read.get("DeviceName") == ("lab-strongswan" if patched else None)
    assert read["BgpAsn"] == "65010"


def test_a_rule_keeps_its_description_whatever_it_names(ec2) -> None:
    patched, client = ec2
    vpc = client.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    group, peer = (
        client.create_security_group(GroupName=n, Description=n, VpcId=vpc)["GroupId"] for n in "ab"
    )
    client.authorize_security_group_ingress(GroupId=group, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "10.1.0.0/16", "Description": "cidr"}]},
        {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "UserIdGroupPairs": [{"GroupId": peer, "Description": "group"}]},
        {"IpProtocol": "tcp", "FromPort": 2049, "ToPort": 2049, "PrefixListIds": [{"PrefixListId": "pl-0123", "Description": "prefix"}]},
    ])  # fmt: skip
    rules = client.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [group]}])
    by_port = {r["FromPort"]: r.get("Description") for r in rules["SecurityGroupRules"] if not r["IsEgress"]}
    assert by_port == {22: "cidr", 443: "group" if patched else None, 2049: "prefix" if patched else None}
