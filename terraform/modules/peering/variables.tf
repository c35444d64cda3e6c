variable "cluster" {
  description = "Cluster name from cluster.yaml (VPCs are named <cluster>-<region>)."
  type        = string
}

variable "region" {
  description = "This (requesting) region."
  type        = string
}

variable "peer_region" {
  description = "The accepting region, applied earlier in spill-over order (provider aws.peer points there)."
  type        = string
}

variable "vpc_id" {
  description = "This region's VPC."
  type        = string
}

variable "vpc_cidr" {
  description = "This region's VPC CIDR (routed from the peer)."
  type        = string
}

variable "peer_vpc_cidr" {
  description = "The peer VPC's CIDR from the spec (routed from here; must match the peer VPC)."
  type        = string
}

variable "route_table_ids" {
  description = "This region's private route table id per zone."
  type        = map(string)
}
