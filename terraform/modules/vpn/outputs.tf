output "vpn_gateway_id" {
  description = "The virtual private gateway's id."
  value       = aws_vpn_gateway.this.id
}

output "site_vpn_tunnels" {
  description = "Per site, both tunnels as the Chef cookbook reads them: outside address, inside /30, the SSM name of the pre-shared key (never the key) and the AWS side's BGP ASN."
  value = {
    for site, c in aws_vpn_connection.site : site => [
      {
        outside_ip    = c.tunnel1_address
        inside_cidr   = c.tunnel1_inside_cidr
        psk_parameter = aws_ssm_parameter.psk["${site}/tunnel1"].name
        aws_asn       = tonumber(c.tunnel1_bgp_asn)
      },
      {
        outside_ip    = c.tunnel2_address
        inside_cidr   = c.tunnel2_inside_cidr
        psk_parameter = aws_ssm_parameter.psk["${site}/tunnel2"].name
        aws_asn       = tonumber(c.tunnel2_bgp_asn)
      },
    ]
  }
}

output "amazon_side_asn" {
  description = "BGP ASN of the virtual private gateway (the site's BGP peer)."
  value       = tonumber(aws_vpn_gateway.this.amazon_side_asn)
}

output "connection_ids" {
  description = "Site => the VPN connection's id (CloudWatch alarms on its tunnels, ../alarms)."
  value       = { for site, c in aws_vpn_connection.site : site => c.id }
}
