output "peering_connection_id" {
  description = "The VPC peering connection's id."
  value       = aws_vpc_peering_connection.this.id
}

output "peer_vpc_id" {
  description = "The peer VPC's id (looked up by name and CIDR)."
  value       = data.aws_vpc.peer.id
}
