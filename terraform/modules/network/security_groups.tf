# The cluster security group (control plane and workers): cluster traffic only from the cluster's own networks
# (every VPC, the physical sites, the pod network, the client VPN pool). Nothing from 0.0.0.0/0.
locals {
  # name => [protocol, from, to]
  cluster_ports = {
    ssh           = ["tcp", 22, 22]
    apiserver     = ["tcp", 6443, 6443]
    kubelet       = ["tcp", 10250, 10250]
    flannel-vxlan = ["udp", 8472, 8472]
    nfs           = ["tcp", 2049, 2049]
    nodeports     = ["tcp", 30000, 32767]
  }
  cluster_ingress = {
    for pair in setproduct(keys(local.cluster_ports), var.cluster_cidrs) :
    "${pair[0]}/${pair[1]}" => { port = local.cluster_ports[pair[0]], cidr = pair[1], what = pair[0] }
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
  for_each          = local.cluster_ingress
  security_group_id = aws_security_group.cluster.id
  description       = "${each.value.what} from ${each.value.cidr}"
  cidr_ipv4         = each.value.cidr
  ip_protocol       = each.value.port[0]
  from_port         = each.value.port[1]
  to_port           = each.value.port[2]
}

resource "aws_vpc_security_group_ingress_rule" "cluster_icmp" {
  for_each          = toset(var.cluster_cidrs)
  security_group_id = aws_security_group.cluster.id
  description       = "ICMP (path MTU discovery, ping) from ${each.value}"
  cidr_ipv4         = each.value
  ip_protocol       = "icmp"
  from_port         = -1
  to_port           = -1
}

resource "aws_vpc_security_group_egress_rule" "cluster_internal" {
  for_each          = toset(var.cluster_cidrs)
  security_group_id = aws_security_group.cluster.id
  description       = "Everything to the cluster's networks (${each.value})"
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
}

# Image pulls, apt and the AWS APIs go out through the NAT gateways over HTTP(S) only.
resource "aws_vpc_security_group_egress_rule" "cluster_web" {
  for_each          = { https = 443, http = 80 }
  security_group_id = aws_security_group.cluster.id
  description       = "${upper(each.key)} to the internet through NAT (registries, packages, AWS APIs)"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = each.value
  to_port           = each.value
}
