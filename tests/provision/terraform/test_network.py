"""Addresses and exposure: every CIDR in the output is the spec's, none overlap, and nothing but a VPN endpoint
may take ingress from 0.0.0.0/0."""

import ipaddress
import itertools
import re

from provision import tunnels
from provision.terraform.context import cluster_cidrs, node_cidrs
from tests.provision.terraform.tf_files import (
    MODULES,
    all_resources,
    code,
    module_calls,
    module_dirs,
    tf_files,
)

CIDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}/\d{1,2}\b")
ANYWHERE = "0.0.0.0/0"
# Modules whose security groups may admit 0.0.0.0/0 (a VPN endpoint's public side). Today none needs it.
VPN_ENDPOINT_MODULES = {"client_vpn"}


def _spec_networks(cluster) -> set[str]:
    nets = {r.cidr for r in cluster.regions} | {s.cidr for s in cluster.sites}
    # the tunnels' inside /30s come from the spec through the tunnel plan (provision/tunnels.py)
    inside = {
        c
        for r in cluster.regions
        for s in cluster.sites
        for c in tunnels.inside_cidrs(cluster, r.name, s.name)
    }
    return (
        nets
        | inside
        | {cluster.vpn.client_cidr, cluster.kubernetes.pod_cidr, cluster.kubernetes.service_cidr}
    )


def test_every_cidr_in_the_rendered_output_is_the_specs(cluster, rendered):
    spec = _spec_networks(cluster)
    found = {c for root in rendered.iterdir() for p in tf_files(root) for c in CIDR.findall(code(p))}
    assert found, "no CIDR rendered"
    assert found <= spec, f"not in the spec: {sorted(found - spec)}"


def test_no_two_rendered_networks_overlap(cluster, rendered):
    found = {c for root in rendered.iterdir() for p in tf_files(root) for c in CIDR.findall(code(p))}
    nets = [ipaddress.ip_network(c) for c in sorted(found)]
    overlapping = [(str(a), str(b)) for a, b in itertools.combinations(nets, 2) if a.overlaps(b)]
    assert not overlapping


def test_module_resources_hard_code_no_network_but_anywhere():
    for module in module_dirs():
        for rtype, name, body in all_resources(module):
            assert set(CIDR.findall(str(body))) <= {ANYWHERE}, f"{module.name}: {rtype}.{name}"


def test_cluster_networks_given_to_security_groups_are_the_specs(cluster, rendered):
    expected = cluster_cidrs(cluster)
    assert ANYWHERE not in expected
    for region in cluster.regions:
        calls = module_calls(rendered / region.name)
        assert calls["network"]["cluster_cidrs"] == expected
        assert calls["network"]["node_cidrs"] == node_cidrs(cluster)
        assert set(node_cidrs(cluster)) < set(expected)
        if "efs" in calls:
            assert calls["efs"]["client_prefix_list_id"] == "${module.network.node_prefix_list_id}"


def _ingress_sources(body: dict, rtype: str) -> list[str]:
    if rtype == "aws_vpc_security_group_ingress_rule":
        return [body.get("cidr_ipv4", ""), body.get("for_each", ""), body.get("prefix_list_id", "")]
    if rtype == "aws_security_group_rule" and body.get("type") == "ingress":
        return [str(body.get("cidr_blocks", ""))]
    if rtype == "aws_security_group":
        return [str(rule.get("cidr_blocks", "")) for rule in body.get("ingress", [])]
    return []


def test_no_security_group_admits_anywhere_except_a_vpn_endpoint():
    checked = 0
    for module in module_dirs():
        for rtype, name, body in all_resources(module):
            for source in _ingress_sources(body, rtype):
                checked += 1
                if ANYWHERE in source and module.name not in VPN_ENDPOINT_MODULES:
                    raise AssertionError(f"{module.name}: {rtype}.{name} admits {ANYWHERE}")
    assert checked, "no ingress rules found: the test would be vacuous"


# Where an ingress rule may take its sources from: the cluster's prefix lists, or the control-plane group itself.
ALLOWED_SOURCES = {
    ("prefix_list_id", "${aws_ec2_managed_prefix_list.cluster.id}"),
    ("prefix_list_id", "${aws_ec2_managed_prefix_list.nodes.id}"),
    ("prefix_list_id", "${var.client_prefix_list_id}"),
    ("referenced_security_group_id", "${aws_security_group.control_plane.id}"),
    ("referenced_security_group_id", "${aws_security_group.efa[0].id}"),  # EFA: the group itself
    (
        "referenced_security_group_id",
        "${var.client_security_group_id}",
    ),  # SSH machines: the Client VPN's ENIs
}


def test_ingress_rules_draw_their_sources_from_the_cluster_networks():
    checked = 0
    for module in module_dirs():
        for rtype, name, body in all_resources(module):
            if rtype == "aws_vpc_security_group_ingress_rule":
                checked += 1
                sources = {
                    (k, body[k])
                    for k in ("prefix_list_id", "referenced_security_group_id", "cidr_ipv4")
                    if k in body
                }
                # The Resolver endpoint, the pod gateways and the SSH machines admit their clients (the sites' and
                # the Client VPN's networks, literal spec CIDRs) one rule per CIDR.
                per_site = body.get("for_each") == "${toset(var.client_cidrs)}"
                allowed = ALLOWED_SOURCES | ({("cidr_ipv4", "${each.value}")} if per_site else set())
                assert len(sources) == 1 and sources <= allowed, f"{module.name}: {name} takes {sources}"
    assert checked >= 4
    text = (MODULES / "network/security_groups.tf").read_text()
    assert "for_each = var.cluster_cidrs" in text and "for_each = var.node_cidrs" in text


def test_anywhere_appears_only_in_default_routes_and_web_egress():
    for module in module_dirs():
        for rtype, name, body in all_resources(module):
            if ANYWHERE in str(body):
                assert (rtype, name) in {
                    ("aws_route", "public_internet"),
                    ("aws_route", "private_nat"),
                    ("aws_vpc_security_group_egress_rule", "cluster_web"),
                    ("aws_vpn_connection", "site"),  # route-based tunnels' traffic selectors, not ingress
                }, f"{module.name}: {rtype}.{name} uses {ANYWHERE}"


def test_etcd_ports_are_open_between_control_plane_members_only(cluster, rendered):
    """kubeadm's stacked etcd: members reach each other on 2379 (client) and 2380 (peer)."""
    rules = {
        (rtype, name): body
        for rtype, name, body in all_resources(MODULES / "network")
        if rtype.startswith("aws_vpc_security_group_") and body.get("from_port") == 2379
    }
    assert set(rules) == {
        ("aws_vpc_security_group_ingress_rule", "etcd"),
        ("aws_vpc_security_group_egress_rule", "etcd"),
    }
    for body in rules.values():
        assert (body["from_port"], body["to_port"], body["ip_protocol"]) == (2379, 2380, "tcp")
        assert body["referenced_security_group_id"] == "${aws_security_group.control_plane.id}"
        assert body["security_group_id"] == "${aws_security_group.control_plane.id}"
    call = module_calls(rendered / cluster.primary_region)["control_plane"]
    assert call["etcd_security_group_id"] == "${module.network.control_plane_security_group_id}"
