output "private_subnets" {
  description = "Private subnet CIDR per availability zone (nodes, control plane, EFS mount targets)."
  value       = local.private
}

output "public_subnets" {
  description = "Public subnet CIDR per availability zone (NAT gateways only)."
  value       = local.public
}

output "public_block" {
  description = "The last private-sized block of the VPC, which the public subnets divide."
  value       = local.public_block
}

output "zone_index" {
  description = "Zone name to its position in the spec (the subnet number)."
  value       = { for i, zone in var.zones : zone => i }
}
