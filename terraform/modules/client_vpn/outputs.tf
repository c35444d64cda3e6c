output "endpoint_id" {
  description = "The Client VPN endpoint's id (`aws ec2 export-client-vpn-client-configuration --client-vpn-endpoint-id`)."
  value       = aws_ec2_client_vpn_endpoint.this.id
}

output "dns_name" {
  description = "The endpoint's DNS name, which laptops' OpenVPN profiles connect to."
  value       = aws_ec2_client_vpn_endpoint.this.dns_name
}

output "security_group_id" {
  description = "The endpoint's security group."
  value       = aws_security_group.endpoint.id
}
