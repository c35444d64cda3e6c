"""The pod-network gateway: the failover function against moto (EC2 route tables and instances), and the
rendered primary root routing every private route table's pod CIDR through the module."""

from __future__ import annotations

import importlib.util
import sys

import boto3
import pytest
from moto import mock_aws

from tests.provision.terraform.tf_files import parse
from tests.support import ROOT

SPEC = importlib.util.spec_from_file_location(
    "failover", ROOT / "terraform/modules/pod_gateway/failover/failover.py"
)
failover = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = failover  # dataclasses look their module up
SPEC.loader.exec_module(failover)

POD_CIDR = "10.128.0.0/14"
CLUSTER = "dlr"


@pytest.fixture
def vpc(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(k, "testing")
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-west-2")
        vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
        tables = [ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"] for _ in range(3)]
        ami = "ami-12c6146b"  # one of moto's built-in images (listing them all is slow)
        gateways = []
        for _ in range(2):
            inst = ec2.run_instances(
                ImageId=ami, MinCount=1, MaxCount=1, InstanceType="t3.small", SubnetId=subnet,
                TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": failover.GATEWAY_TAG, "Value": CLUSTER}]}],
            )["Instances"][0]  # fmt: skip
            ec2.modify_instance_attribute(InstanceId=inst["InstanceId"], SourceDestCheck={"Value": False})
            gateways.append(inst)
        # another cluster's gateway and an untagged instance are never chosen
        ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, SubnetId=subnet,
                          TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": failover.GATEWAY_TAG, "Value": "other"}]}])  # fmt: skip
        yield ec2, tables, sorted(gateways, key=lambda g: g["InstanceId"])


def _targets(ec2, tables):
    out = {}
    for rt in ec2.describe_route_tables(RouteTableIds=tables)["RouteTables"]:
        out[rt["RouteTableId"]] = next(
            (r.get("NetworkInterfaceId") for r in rt["Routes"] if r.get("DestinationCidrBlock") == POD_CIDR),
            None,
        )
    return out


def _eni(gw):
    return gw["NetworkInterfaces"][0]["NetworkInterfaceId"]


def test_routes_created_then_moved_when_the_active_gateway_dies(vpc):
    ec2, tables, (a, b) = vpc
    result = failover.run(ec2, CLUSTER, tables, POD_CIDR)
    assert result["active"] == a["InstanceId"] and len(result["moved"]) == 3
    assert set(_targets(ec2, tables).values()) == {_eni(a)}

    assert failover.run(ec2, CLUSTER, tables, POD_CIDR)["moved"] == []  # stable: nothing to do

    ec2.stop_instances(InstanceIds=[a["InstanceId"]])
    result = failover.run(ec2, CLUSTER, tables, POD_CIDR)
    assert result["active"] == b["InstanceId"]
    assert [m["from"] for m in result["moved"]] == [_eni(a)] * 3
    assert set(_targets(ec2, tables).values()) == {_eni(b)}

    ec2.start_instances(
        InstanceIds=[a["InstanceId"]]
    )  # back, but the routes stay where they are: no flapping
    assert failover.run(ec2, CLUSTER, tables, POD_CIDR)["moved"] == []
    assert set(_targets(ec2, tables).values()) == {_eni(b)}


def test_a_table_pointing_elsewhere_is_brought_back_to_the_active_gateway(vpc):
    ec2, tables, (a, b) = vpc
    failover.run(ec2, CLUSTER, tables, POD_CIDR)
    ec2.replace_route(RouteTableId=tables[2], DestinationCidrBlock=POD_CIDR, NetworkInterfaceId=_eni(b))
    result = failover.run(ec2, CLUSTER, tables, POD_CIDR)
    assert result["active"] == a["InstanceId"]  # two tables vote for a
    assert result["moved"] == [{"table": tables[2], "from": _eni(b), "to": _eni(a)}]


def test_no_healthy_gateway_leaves_the_routes_alone(vpc):
    ec2, tables, (a, b) = vpc
    failover.run(ec2, CLUSTER, tables, POD_CIDR)
    ec2.stop_instances(InstanceIds=[a["InstanceId"], b["InstanceId"]])
    result = failover.run(ec2, CLUSTER, tables, POD_CIDR)
    assert result["active"] is None and result["moved"] == [] and "no healthy pod gateway" in result["error"]
    assert set(_targets(ec2, tables).values()) == {_eni(a)}


def test_impaired_status_check_counts_as_dead():
    gws = [failover.Gateway("i-a", "eni-a", False), failover.Gateway("i-b", "eni-b", True)]
    active, changes = failover.decide(gws, {"rtb-1": "eni-a", "rtb-2": None})
    assert active.instance_id == "i-b"
    assert [(c.route_table_id, c.action) for c in changes] == [("rtb-1", "replace"), ("rtb-2", "create")]


def test_primary_root_routes_every_private_table_through_the_gateway(rendered, cluster):
    primary = parse(rendered / cluster.primary_region / "researchers.tf")
    modules = {k: v for m in primary["module"] for k, v in m.items()}
    gw = modules["pod_gateway"]
    assert gw["route_table_ids"] == "${module.network.private_route_table_ids}"
    assert gw["pod_cidr"] == cluster.kubernetes.pod_cidr
    assert {cluster.vpn.client_cidr, cluster.region(cluster.primary_region).cidr} <= set(gw["client_cidrs"])
    assert gw["instance_count"] == 2
    assert modules["ecr"]["replicate_to"] == ["us-east-1", "us-east-2"]
    assert {g["name"] for g in modules["ssh_machines"]["groups"]} == {"gpu", "cpu"}
    other = parse(rendered / "us-east-1" / "researchers.tf")
    names = {k for m in other["module"] for k in m}
    assert names == {"ecr"}  # no gateway, no SSH machines, no replication outside the primary region
    assert next(m["ecr"] for m in other["module"])["replicate_to"] == []


def test_the_gateway_instances_forward_and_the_routes_are_left_to_the_function():
    main = parse(ROOT / "terraform/modules/pod_gateway/main.tf")
    resources = {(t, n): body for r in main["resource"] for t, v in r.items() for n, body in v.items()}
    gw = resources[("aws_instance", "gateway")]
    assert gw["source_dest_check"] is False
    assert "aws_security_group.forward.id" in gw["vpc_security_group_ids"]
    rule = resources[("aws_vpc_security_group_ingress_rule", "forward")]
    assert (rule["ip_protocol"], rule["for_each"]) == ("-1", "${toset(var.client_cidrs)}")
    route = resources[("aws_route", "pods")]
    assert route["lifecycle"][0]["ignore_changes"] == ["${network_interface_id}"] or route["lifecycle"][0][
        "ignore_changes"
    ] == ["network_interface_id"]


def test_render_zips_the_failover_function_the_same_way_each_time(tmp_path):
    """The zip Lambda runs (handler failover.handler), written by `invoke render` in place of the archive provider
    (the mirror holds only hashicorp/aws); the same bytes each time, so the function changes only with its code."""
    import zipfile

    from provision.terraform.render import FAILOVER_SOURCE, write_failover_zip

    first = write_failover_zip(tmp_path / "a.zip").read_bytes()
    assert write_failover_zip(tmp_path / "b.zip").read_bytes() == first
    with zipfile.ZipFile(tmp_path / "a.zip") as z:
        assert z.namelist() == ["failover.py"] and z.read("failover.py") == FAILOVER_SOURCE.read_bytes()
    assert "def handler(" in FAILOVER_SOURCE.read_text()
