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

resource "aws_vpc_security_group_egress_rule" "endpoint" {
  for_each          = local.destinations
  security_group_id = aws_security_group.endpoint.id
  description       = "Laptops to ${each.key}"
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
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
