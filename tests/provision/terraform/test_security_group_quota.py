"""Rules per security group and direction in every rendered region, counted as AWS counts them against the
60-rules quota (a prefix-list reference counts as the list's max_entries; provision/terraform/sg_quota.py), stay
at most 80% of the quota: room for a further site (7 more ingress rules on the cluster group) before AWS would
refuse a rule in the middle of an apply."""

from pathlib import Path

import pytest

from provision.terraform.sg_quota import QUOTA, Root, Uncountable

LIMIT = int(QUOTA * 0.8)


def test_every_security_group_of_every_region_stays_under_the_quota_with_headroom(cluster, rendered):
    for region in cluster.regions:
        counts = Root(rendered / region.name).counts()
        print(region.name, {f"{m}.{g}.{d}": n for (m, g, d), n in sorted(counts.items())})
        assert counts[("network", "cluster", "ingress")] > 0
        over = {k: n for k, n in counts.items() if n > LIMIT}
        assert not over, f"{region.name}: rules over {LIMIT} (of {QUOTA}): {over}"


def test_the_cluster_group_counts_prefix_lists_at_their_max_entries(cluster, rendered):
    """2 ports from every cluster network (API, ICMP; no SSH: Session Manager; no NodePorts: issue 26) and 2
    (VXLAN, kubelet) from the node networks (provision/terraform/ports.py)."""
    networks = len(cluster.regions) + len(cluster.sites) + 2  # + pod network and client VPN pool
    nodes = len(cluster.regions) + len(cluster.sites)
    counts = Root(rendered / cluster.primary_region).counts()
    assert counts[("network", "cluster", "ingress")] == 2 * networks + 2 * nodes
    assert counts[("network", "cluster", "egress")] == networks + 2
    assert counts[("network", "control_plane", "ingress")] == 1
    assert counts[("efs", "nfs", "ingress")] == nodes


def _root(tmp_path: Path, module: str, call: str) -> Root:
    (tmp_path / "m").mkdir()
    (tmp_path / "m/main.tf").write_text(module)
    (tmp_path / "root").mkdir()
    (tmp_path / "root/main.tf").write_text(call)
    return Root(tmp_path / "root")


def test_a_for_expression_is_never_counted_as_zero(tmp_path):
    root = _root(
        tmp_path,
        """
locals {
  ports = { ssh = 22, api = 6443, kubelet = 10250, vxlan = 8472, nfs = 2049, nodeports = 30000, icmp = -1 }
}
resource "aws_security_group" "g" {
  name = "g"
}
resource "aws_vpc_security_group_ingress_rule" "r" {
  for_each          = { for c in var.cidrs : c => local.ports }
  security_group_id = aws_security_group.g.id
  ip_protocol       = "tcp"
}
""",
        'module "n" {\n  source = "../m"\n  cidrs = ["a", "b"]\n}\n',
    )
    with pytest.raises(Uncountable):
        root.counts()  # a for expression is not evaluated: never counted as zero


def test_a_for_expression_over_setproduct_counts_every_pair(tmp_path):
    """7 ports times 2 networks: 14 rules at most (the SSH machines' egress, issue 36), an upper bound."""
    root = _root(
        tmp_path,
        """
locals {
  ports = { ssh = 22, api = 6443, kubelet = 10250, vxlan = 8472, nfs = 2049, nodeports = 30000, icmp = -1 }
}
resource "aws_security_group" "g" {
  name = "g"
}
resource "aws_vpc_security_group_egress_rule" "r" {
  for_each          = { for pair in setproduct(keys(local.ports), var.cidrs) : "${pair[0]} ${pair[1]}" => pair }
  security_group_id = aws_security_group.g.id
  ip_protocol       = "tcp"
}
""",
        'module "n" {\n  source = "../m"\n  cidrs = ["a", "b"]\n}\n',
    )
    assert root.counts()[("n", "g", "egress")] == 14


def test_a_prefix_list_reference_counts_as_its_max_entries(tmp_path):
    """7 ports referencing a list of 9 networks count 63 rules: more than AWS allows, list or no list."""
    root = _root(
        tmp_path,
        """
locals {
  ports = { ssh = 22, api = 6443, kubelet = 10250, vxlan = 8472, nfs = 2049, nodeports = 30000, icmp = -1 }
}
resource "aws_ec2_managed_prefix_list" "all" {
  name           = "all"
  address_family = "IPv4"
  max_entries    = length(var.cidrs)
}
resource "aws_security_group" "g" {
  name = "g"
}
resource "aws_vpc_security_group_ingress_rule" "r" {
  for_each          = local.ports
  security_group_id = aws_security_group.g.id
  prefix_list_id    = aws_ec2_managed_prefix_list.all.id
  ip_protocol       = "tcp"
}
resource "aws_vpc_security_group_egress_rule" "web" {
  for_each          = toset(var.cidrs)
  security_group_id = aws_security_group.g.id
  ip_protocol       = "-1"
}
""",
        'module "n" {\n  source = "../m"\n  cidrs = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]\n}\n',
    )
    counts = root.counts()
    assert counts[("n", "g", "ingress")] == 63 > QUOTA
    assert counts[("n", "g", "egress")] == 9
