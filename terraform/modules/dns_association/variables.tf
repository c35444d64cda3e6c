variable "cluster" {
  description = "Cluster name from cluster.yaml (the zone carries research.cluster/cluster=<cluster>)."
  type        = string
}

variable "domain" {
  description = "The private zone's name (cluster.yaml domain)."
  type        = string
}

variable "vpc_id" {
  description = "This region's VPC."
  type        = string
}

variable "region" {
  description = "This region."
  type        = string
}
