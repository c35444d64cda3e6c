# Site-to-site VPN, route-based: a virtual private gateway on the VPC (its own ASN), and per physical site a
# customer gateway (its strongSwan + BIRD box) and a VPN connection whose two tunnels each carry a BGP session
# over their inside addresses (static_routes_only = false): the site announces its network, AWS the VPC's, and
# the gateway propagates what it learns into the private route tables. Both tunnels use traffic selectors
# 0.0.0.0/0 (AWS's default for route-based connections), so either tunnel carries any flow and a flow may
# return on the other one. Tunnel options are pinned to the spec, which the Chef cookbook also renders into
# strongSwan. AWS generates the pre-shared keys; they are copied into SSM SecureStrings for the site gateway and
# never appear in an output.
locals {
  name     = "${var.cluster}-${var.region}"
  tunnels  = ["1", "2"]
  ike      = ["ikev${var.tunnel.ike_version}"]
  max_asn2 = 2147483647
  psk = {
    for pair in setproduct(keys(var.sites), local.tunnels) :
    "${pair[0]}/tunnel${pair[1]}" => { site = pair[0], tunnel = pair[1] }
  }
}

resource "aws_vpn_gateway" "this" {
  vpc_id          = var.vpc_id
  amazon_side_asn = tostring(var.amazon_side_asn)
  tags            = { Name = local.name }
}

resource "aws_vpn_gateway_route_propagation" "private" {
  for_each       = var.private_route_table_ids
  vpn_gateway_id = aws_vpn_gateway.this.id
  route_table_id = each.value
}

resource "aws_customer_gateway" "site" {
  for_each         = var.sites
  type             = "ipsec.1"
  ip_address       = each.value.public_ip
  bgp_asn          = each.value.bgp_asn <= local.max_asn2 ? tostring(each.value.bgp_asn) : null
  bgp_asn_extended = each.value.bgp_asn > local.max_asn2 ? tostring(each.value.bgp_asn) : null
  device_name      = "${each.key}-strongswan"
  tags             = { Name = "${local.name}-${each.key}" }

  lifecycle {
    precondition {
      condition     = each.value.bgp_asn != var.amazon_side_asn
      error_message = "Site ${each.key}: its BGP ASN equals the gateway's amazon_side_asn; eBGP needs two different ASNs."
    }
  }
}

resource "aws_vpn_connection" "site" {
  for_each            = var.sites
  vpn_gateway_id      = aws_vpn_gateway.this.id
  customer_gateway_id = aws_customer_gateway.site[each.key].id
  type                = "ipsec.1"
  static_routes_only  = false

  local_ipv4_network_cidr  = "0.0.0.0/0"
  remote_ipv4_network_cidr = "0.0.0.0/0"
  tunnel1_inside_cidr      = each.value.inside_cidrs[0]
  tunnel2_inside_cidr      = each.value.inside_cidrs[1]

  tunnel1_ike_versions                 = local.ike
  tunnel1_phase1_encryption_algorithms = var.tunnel.ike_encryption
  tunnel1_phase1_integrity_algorithms  = var.tunnel.ike_integrity
  tunnel1_phase1_dh_group_numbers      = var.tunnel.dh_groups
  tunnel1_phase1_lifetime_seconds      = var.tunnel.ike_lifetime_s
  tunnel1_phase2_encryption_algorithms = var.tunnel.esp_encryption
  tunnel1_phase2_integrity_algorithms  = var.tunnel.esp_integrity
  tunnel1_phase2_dh_group_numbers      = var.tunnel.dh_groups
  tunnel1_phase2_lifetime_seconds      = var.tunnel.esp_lifetime_s
  tunnel1_dpd_timeout_seconds          = var.tunnel.dpd_timeout_s
  tunnel1_dpd_timeout_action           = "restart"
  tunnel1_startup_action               = "add"

  tunnel2_ike_versions                 = local.ike
  tunnel2_phase1_encryption_algorithms = var.tunnel.ike_encryption
  tunnel2_phase1_integrity_algorithms  = var.tunnel.ike_integrity
  tunnel2_phase1_dh_group_numbers      = var.tunnel.dh_groups
  tunnel2_phase1_lifetime_seconds      = var.tunnel.ike_lifetime_s
  tunnel2_phase2_encryption_algorithms = var.tunnel.esp_encryption
  tunnel2_phase2_integrity_algorithms  = var.tunnel.esp_integrity
  tunnel2_phase2_dh_group_numbers      = var.tunnel.dh_groups
  tunnel2_phase2_lifetime_seconds      = var.tunnel.esp_lifetime_s
  tunnel2_dpd_timeout_seconds          = var.tunnel.dpd_timeout_s
  tunnel2_dpd_timeout_action           = "restart"
  tunnel2_startup_action               = "add"

  tags = { Name = "${local.name}-${each.key}" }
}

resource "aws_ssm_parameter" "psk" {
  for_each    = local.psk
  name        = "${var.psk_ssm_prefix}/${var.region}/${each.value.site}/tunnel${each.value.tunnel}"
  description = "Pre-shared key of tunnel ${each.value.tunnel} between ${var.region} and site ${each.value.site}"
  type        = "SecureString"
  key_id      = var.kms_key_arn
  value       = each.value.tunnel == "1" ? aws_vpn_connection.site[each.value.site].tunnel1_preshared_key : aws_vpn_connection.site[each.value.site].tunnel2_preshared_key
}
