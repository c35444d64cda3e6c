# A Route 53 Resolver inbound endpoint in the primary VPC: the sites' servers forward the cluster's domain to its
# addresses (systemd-resolved, cookbook recipe dns_forwarding) over the site-to-site VPN, and get the private
# zone's answers (api.<domain>, the servers' names) that only the VPC's resolver knows. Plain DNS (Do53) on UDP
# and TCP 53, from the sites' networks only.
resource "aws_security_group" "resolver" {
  name        = "${var.cluster}-resolver-inbound"
  description = "Route 53 Resolver inbound endpoint of ${var.cluster}: DNS from the sites"
  vpc_id      = var.vpc_id
  tags        = { Name = "${var.cluster}-resolver-inbound" }
}

resource "aws_vpc_security_group_ingress_rule" "dns_udp" {
  for_each          = toset(var.client_cidrs)
  security_group_id = aws_security_group.resolver.id
  description       = "DNS (UDP) from site network ${each.value}"
  cidr_ipv4         = each.value
  ip_protocol       = "udp"
  from_port         = 53
  to_port           = 53
}

resource "aws_vpc_security_group_ingress_rule" "dns_tcp" {
  for_each          = toset(var.client_cidrs)
  security_group_id = aws_security_group.resolver.id
  description       = "DNS (TCP) from site network ${each.value}"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 53
  to_port           = 53
}

resource "aws_route53_resolver_endpoint" "inbound" {
  name                   = "${var.cluster}-sites"
  direction              = "INBOUND"
  resolver_endpoint_type = "IPV4"
  protocols              = ["Do53"]
  security_group_ids     = [aws_security_group.resolver.id]

  dynamic "ip_address" {
    for_each = var.subnet_ids
    content {
      subnet_id = ip_address.value
    }
  }

  tags = { Name = "${var.cluster}-sites" }
}
