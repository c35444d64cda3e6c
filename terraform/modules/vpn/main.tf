# Site-to-site VPN: a virtual private gateway on the VPC, and per physical site a customer gateway (its
# strongSwan box) and a VPN connection with static routes to the site's network. Tunnel options are pinned to
# the spec, which the Chef cookbook also renders into strongSwan. AWS generates the pre-shared keys; they are
# copied into SSM SecureStrings for the site gateway and never appear in an output.
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
  vpc_id = var.vpc_id
  tags   = { Name = local.name }
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
}

resource "aws_vpn_connection" "site" {
  for_each            = var.sites
  vpn_gateway_id      = aws_vpn_gateway.this.id
  customer_gateway_id = aws_customer_gateway.site[each.key].id
  type                = "ipsec.1"
  static_routes_only  = true

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

resource "aws_vpn_connection_route" "site" {
  for_each               = var.sites
  vpn_connection_id      = aws_vpn_connection.site[each.key].id
  destination_cidr_block = each.value.cidr
}

resource "aws_ssm_parameter" "psk" {
  for_each    = local.psk
  name        = "${var.psk_ssm_prefix}/${var.region}/${each.value.site}/tunnel${each.value.tunnel}"
  description = "Pre-shared key of tunnel ${each.value.tunnel} between ${var.region} and site ${each.value.site}"
  type        = "SecureString"
  key_id      = var.kms_key_arn
  value       = each.value.tunnel == "1" ? aws_vpn_connection.site[each.value.site].tunnel1_preshared_key : aws_vpn_connection.site[each.value.site].tunnel2_preshared_key
}
