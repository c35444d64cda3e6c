# The cluster security group (control plane and workers): cluster traffic only from the cluster's own networks
# (every VPC, the physical sites, the pod network, the client VPN pool). Nothing from 0.0.0.0/0.
#
# The networks live in two managed prefix lists, so each port is one rule. AWS counts a rule that references a
# prefix list as max_entries rules towards the 60 inbound (and 60 outbound) rules per security group, which is
# why max_entries is the list's length and not more (ModifyManagedPrefixList raises it in place when a site is
# added). tests/provision/terraform/test_security_group_quota.py counts the rules of every rendered region.
locals {
  # name => [protocol, from, to]: from every cluster network (laptops, pods, sites, VPCs)
  # No SSH: operators reach the instances through Session Manager (no key, no open port: modules/iam/operator.tf).
  # Each port is open between exactly the parties that use it (provision/terraform/ports.py, checked by
  # `invoke check-terraform`).
  # No NodePorts: nothing of the cluster serves one, and researchers' quotas allow none (issue 26).
  cluster_ports = {
    apiserver = ["tcp", 6443, 6443]
    icmp      = ["icmp", -1, -1] # path MTU discovery and ping
  }
  # from node addresses only (VPCs and sites): flannel VXLAN between nodes, the kubelet API for the API server and
  # for scrapers in pods (flannel masquerades pod traffic to node addresses). No NFS: nodes mount EFS and the
  # lab's NAS, they serve none.
  node_ports = {
    flannel-vxlan = ["udp", 8472, 8472]
    kubelet       = ["tcp", 10250, 10250]
  }
}

resource "aws_ec2_managed_prefix_list" "cluster" {
  name           = "${local.name}-cluster-networks"
  address_family = "IPv4"
  max_entries    = length(var.cluster_cidrs)
  tags           = { Name = "${local.name}-cluster-networks" }

  dynamic "entry" {
    for_each = var.cluster_cidrs
    content {
      cidr        = entry.value
      description = "cluster network ${entry.key}"
    }
  }
}

resource "aws_ec2_managed_prefix_list" "nodes" {
  name           = "${local.name}-node-networks"
  address_family = "IPv4"
  max_entries    = length(var.node_cidrs)
  tags           = { Name = "${local.name}-node-networks" }

  dynamic "entry" {
    for_each = var.node_cidrs
    content {
      cidr        = entry.value
      description = "node network ${entry.key}"
    }
  }
}

resource "aws_security_group" "cluster" {
  #checkov:skip=CKV2_AWS_5:Attached outside this module: node launch templates, control-plane instances and the API load balancer.
  name        = "${local.name}-cluster"
  description = "Kubernetes nodes and control plane of ${var.cluster} in ${var.region}"
  vpc_id      = aws_vpc.this.id
  tags        = { Name = "${local.name}-cluster" }
}

resource "aws_vpc_security_group_ingress_rule" "cluster" {
  for_each          = local.cluster_ports
  security_group_id = aws_security_group.cluster.id
  description       = "${each.key} from the cluster networks"
  prefix_list_id    = aws_ec2_managed_prefix_list.cluster.id
  ip_protocol       = each.value[0]
  from_port         = each.value[1]
  to_port           = each.value[2]
}

resource "aws_vpc_security_group_ingress_rule" "nodes" {
  for_each          = local.node_ports
  security_group_id = aws_security_group.cluster.id
  description       = "${each.key} from the node networks"
  prefix_list_id    = aws_ec2_managed_prefix_list.nodes.id
  ip_protocol       = each.value[0]
  from_port         = each.value[1]
  to_port           = each.value[2]
}

resource "aws_vpc_security_group_egress_rule" "cluster_internal" {
  security_group_id = aws_security_group.cluster.id
  description       = "Everything to the cluster networks"
  prefix_list_id    = aws_ec2_managed_prefix_list.cluster.id
  ip_protocol       = "-1"
}

# Image pulls, apt and the AWS APIs go out through the NAT gateways over HTTP(S) only; S3 through the gateway
# endpoint (endpoints.tf), whose routes are more specific than the NAT default route.
resource "aws_vpc_security_group_egress_rule" "cluster_web" {
  for_each          = { https = 443, http = 80 }
  security_group_id = aws_security_group.cluster.id
  description       = "${upper(each.key)} to the internet through NAT (registries, packages, AWS APIs)"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = each.value
  to_port           = each.value
}

# Control-plane members only: etcd client (2379) and peer (2380) traffic between members. kubeadm's stacked etcd
# listens on the member's address for both; joining members reach the existing ones on 2379 and peer on 2380.
resource "aws_security_group" "control_plane" {
  #checkov:skip=CKV2_AWS_5:Attached to the control-plane instances by the control_plane module.
  name        = "${local.name}-control-plane"
  description = "etcd client and peer traffic between control-plane members of ${var.cluster}"
  vpc_id      = aws_vpc.this.id
  tags        = { Name = "${local.name}-control-plane" }
}

resource "aws_vpc_security_group_ingress_rule" "etcd" {
  security_group_id            = aws_security_group.control_plane.id
  description                  = "etcd client and peer from control-plane members"
  referenced_security_group_id = aws_security_group.control_plane.id
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2380
}

resource "aws_vpc_security_group_egress_rule" "etcd" {
  security_group_id            = aws_security_group.control_plane.id
  description                  = "etcd client and peer to control-plane members"
  referenced_security_group_id = aws_security_group.control_plane.id
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2380
}
