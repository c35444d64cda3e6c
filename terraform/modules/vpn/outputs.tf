output "vpn_gateway_id" {
  description = "The virtual private gateway's id."
  value       = aws_vpn_gateway.this.id
}

output "site_vpn_tunnels" {
  description = "Per site, both tunnels as the Chef cookbook reads them: outside address, inside /30 and the SSM name of the pre-shared key (never the key)."
  value = {
    for site, c in aws_vpn_connection.site : site => [
      {
        outside_ip    = c.tunnel1_address
        inside_cidr   = cidrsubnet("${c.tunnel1_vgw_inside_address}/30", 0, 0)
        psk_parameter = aws_ssm_parameter.psk["${site}/tunnel1"].name
      },
      {
        outside_ip    = c.tunnel2_address
        inside_cidr   = cidrsubnet("${c.tunnel2_vgw_inside_address}/30", 0, 0)
        psk_parameter = aws_ssm_parameter.psk["${site}/tunnel2"].name
      },
    ]
  }
}
