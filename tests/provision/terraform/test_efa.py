"""EFA where the instance type has it: the rendered groups pass the instance table's EFA count (the fewest among a
spot group's types), the launch template gives one EFA interface per network card with the all-traffic self
group and a cluster placement group, and the autoscaler offers vpc.amazonaws.com/efa only for a group whose
template gives it (declared with the node-template tag from the same variable)."""

from __future__ import annotations

import boto3
from moto import mock_aws

from autoscaler.adapters.aws import AwsCloud
from clusterspec import catalog
from clusterspec.names import EFA_RESOURCE, NODE_TEMPLATE_RESOURCE_TAG
from tests.autoscaler.aws_setup import create_groups
from tests.provision.terraform.tf_files import MODULES, module_calls, parse, resources


def test_each_group_gets_the_efa_count_of_its_types(cluster, rendered):
    calls = module_calls(rendered / cluster.primary_region)
    table = catalog.instance_types()
    seen = {}
    for group in cluster.region(cluster.primary_region).node_groups:
        call = calls[f"node_group_{group.name.replace('-', '_')}"]
        assert call["efa_interfaces"] == min(table[t].efa for t in group.instance_types), group.name
        seen[group.name] = call["efa_interfaces"]
    assert seen["gpu-a100x8"] == 4 and seen["gpu-t4"] == 0 and seen["gpu-a10g-spot"] == 1


def test_the_template_gives_one_efa_interface_per_card_in_a_placement_group():
    ((_, lt),) = resources(MODULES / "node_group", "aws_launch_template")
    dyn = {k: v for d in lt["dynamic"] for k, v in d.items()}["network_interfaces"]
    assert dyn["for_each"] == "${range(var.efa_interfaces)}"
    (content,) = dyn["content"]
    assert (
        content["interface_type"] == "efa" and content["network_card_index"] == "${network_interfaces.value}"
    )
    assert "aws_security_group.efa[0].id" in content["security_groups"]
    assert lt["vpc_security_group_ids"] == "${local.efa ? null : var.security_group_ids}"
    ((_, pg),) = resources(MODULES / "node_group", "aws_placement_group")
    assert pg["strategy"] == "cluster"
    ((_, asg),) = resources(MODULES / "node_group", "aws_autoscaling_group")
    assert asg["placement_group"] == "${local.efa ? aws_placement_group.efa[0].id : null}"
    ((_, ingress),) = resources(MODULES / "node_group", "aws_vpc_security_group_ingress_rule")
    assert (
        ingress["ip_protocol"] == "-1"
        and ingress["referenced_security_group_id"] == ingress["security_group_id"]
    )
    ((_, egress),) = resources(MODULES / "node_group", "aws_vpc_security_group_egress_rule")
    assert egress["referenced_security_group_id"] == egress["security_group_id"]
    # the same variable declares it to the autoscaler
    calls = {n: b for m in parse(MODULES / "node_group/main.tf")["module"] for n, b in m.items()}
    assert calls["node_template"]["efa_interfaces"] == "${var.efa_interfaces}"
    assert "node-template/resources/vpc.amazonaws.com/efa" in (MODULES / "node_template/main.tf").read_text()


def test_the_autoscaler_offers_efa_only_where_the_group_declares_it(cluster, monkeypatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    region = cluster.primary_region
    with mock_aws():
        create_groups(cluster, regions=[region])
        a100 = cluster.asg_name(
            region, next(g for g in cluster.region(region).node_groups if g.name == "gpu-a100x8")
        )
        boto3.client("autoscaling", region_name=region).create_or_update_tags(Tags=[{
            "ResourceId": a100, "ResourceType": "auto-scaling-group", "PropagateAtLaunch": False,
            "Key": NODE_TEMPLATE_RESOURCE_TAG + EFA_RESOURCE, "Value": "4"}])  # fmt: skip
        groups = {g["name"]: g for g in AwsCloud(cluster.name, [region], max_attempts=1,
                                                 session=boto3.Session()).list_groups()}  # fmt: skip
    assert groups[a100]["allocatable"][EFA_RESOURCE] == "4"
    spot = cluster.asg_name(region, next(g for g in cluster.region(region).node_groups if g.spot))
    assert EFA_RESOURCE not in groups[spot]["allocatable"]  # the type has EFA, the template does not say so
