output "vpc_id" {
  description = "The VPC's id."
  value       = aws_vpc.this.id
}

output "vpc_cidr" {
  description = "The VPC's CIDR (the spec's)."
  value       = aws_vpc.this.cidr_block
}

output "private_subnet_ids" {
  description = "Private subnet id per availability zone."
  value       = { for zone, s in aws_subnet.private : zone => s.id }
}

output "public_subnet_ids" {
  description = "Public subnet id per availability zone."
  value       = { for zone, s in aws_subnet.public : zone => s.id }
}

output "private_subnet_cidrs" {
  description = "Private subnet CIDR per availability zone (from ../addressing)."
  value       = module.addressing.private_subnets
}

output "public_subnet_cidrs" {
  description = "Public subnet CIDR per availability zone (from ../addressing)."
  value       = module.addressing.public_subnets
}

output "private_route_table_ids" {
  description = "Private route table id per availability zone (peering and VPN routes go here)."
  value       = { for zone, rt in aws_route_table.private : zone => rt.id }
}

output "cluster_security_group_id" {
  description = "The cluster security group (nodes, control plane, EFS clients)."
  value       = aws_security_group.cluster.id
}

output "control_plane_security_group_id" {
  description = "The control-plane members' own group (etcd client and peer between members); attach it with the cluster group."
  value       = aws_security_group.control_plane.id
}

output "cluster_prefix_list_id" {
  description = "Managed prefix list of every cluster network (VPCs, sites, pod network, client VPN pool)."
  value       = aws_ec2_managed_prefix_list.cluster.id
}

output "node_prefix_list_id" {
  description = "Managed prefix list of the networks nodes have their addresses in (VPCs and sites)."
  value       = aws_ec2_managed_prefix_list.nodes.id
}

output "s3_endpoint_id" {
  description = "The S3 gateway endpoint (routes in every route table of the VPC)."
  value       = aws_vpc_endpoint.s3.id
}
