# AWS Client VPN for laptops: OpenVPN-compatible, mutual TLS (server and client-CA certificates in ACM), routes and
# authorization for every VPC, the physical sites and the pod network, connection logs to an encrypted group.
locals {
  name         = "${var.cluster}-${var.region}-laptops"
  destinations = merge({ local-vpc = var.vpc_cidr }, var.routes)
  route_pairs = {
    for pair in setproduct(keys(var.routes), keys(var.subnet_ids)) :
    "${pair[0]}/${pair[1]}" => { destination = var.routes[pair[0]], zone = pair[1] }
  }
}

resource "aws_cloudwatch_log_group" "connections" {
  name              = "/${var.cluster}/${var.region}/client-vpn"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

resource "aws_cloudwatch_log_stream" "connections" {
  name           = "connections"
  log_group_name = aws_cloudwatch_log_group.connections.name
}

resource "aws_security_group" "endpoint" {
  name        = local.name
  description = "Client VPN network interfaces: laptops to the cluster networks"
  vpc_id      = var.vpc_id
  tags        = { Name = local.name }
}

# What laptops reach (issue 26). The endpoint's security group applies to its network interfaces, and laptops'
# traffic leaves through them translated to their addresses (AWS Client VPN Administrator Guide, "Security groups"
# and "Rules and best practices": source NAT to the endpoint's ENI), so these egress rules are what a laptop may
# open: the API server and the SSH machines in this VPC, the VPC's DNS, every port of every pod (the pod gateways
# forward them; NetworkPolicies decide), and with a full tunnel HTTP(S) to the internet. Never a node's kubelet,
# SSH or NodePorts, in this VPC, the others or the sites.
locals {
  egress = merge({
    api-server = { cidr = var.vpc_cidr, proto = "tcp", from = 6443, to = 6443 }
    ssh        = { cidr = var.vpc_cidr, proto = "tcp", from = 22, to = 22 }
    dns-udp    = { cidr = "${cidrhost(var.vpc_cidr, 2)}/32", proto = "udp", from = 53, to = 53 }
    dns-tcp    = { cidr = "${cidrhost(var.vpc_cidr, 2)}/32", proto = "tcp", from = 53, to = 53 }
    icmp       = { cidr = var.vpc_cidr, proto = "icmp", from = -1, to = -1 }
  }, var.egress)
}

resource "aws_vpc_security_group_egress_rule" "endpoint" {
  for_each          = local.egress
  security_group_id = aws_security_group.endpoint.id
  description       = "Laptops: ${each.key}"
  cidr_ipv4         = each.value.cidr
  ip_protocol       = each.value.proto
  from_port         = each.value.from
  to_port           = each.value.to
}

resource "aws_ec2_client_vpn_endpoint" "this" {
  description            = local.name
  client_cidr_block      = var.client_cidr
  server_certificate_arn = var.server_certificate_arn
  split_tunnel           = var.split_tunnel
  transport_protocol     = "udp"
  vpn_port               = 443
  session_timeout_hours  = 12
  vpc_id                 = var.vpc_id
  security_group_ids     = [aws_security_group.endpoint.id]
  dns_servers            = [cidrhost(var.vpc_cidr, 2)]

  authentication_options {
    type                       = "certificate-authentication"
    root_certificate_chain_arn = var.client_root_certificate_arn
  }

  connection_log_options {
    enabled               = true
    cloudwatch_log_group  = aws_cloudwatch_log_group.connections.name
    cloudwatch_log_stream = aws_cloudwatch_log_stream.connections.name
  }

  tags = { Name = local.name }
}

resource "aws_ec2_client_vpn_network_association" "this" {
  for_each               = var.subnet_ids
  client_vpn_endpoint_id = aws_ec2_client_vpn_endpoint.this.id
  subnet_id              = each.value
}

resource "aws_ec2_client_vpn_authorization_rule" "this" {
  for_each               = local.destinations
  client_vpn_endpoint_id = aws_ec2_client_vpn_endpoint.this.id
  target_network_cidr    = each.value
  authorize_all_groups   = true
  description            = "Laptops to ${each.key}"
}

resource "aws_ec2_client_vpn_route" "this" {
  for_each               = local.route_pairs
  client_vpn_endpoint_id = aws_ec2_client_vpn_endpoint.this.id
  destination_cidr_block = each.value.destination
  target_vpc_subnet_id   = aws_ec2_client_vpn_network_association.this[each.value.zone].subnet_id
  description            = "${each.key} via ${each.value.zone}"
}
