variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "domain" {
  description = "The private zone's name (cluster.yaml domain)."
  type        = string
}

variable "vpc_id" {
  description = "The primary region's VPC; the other regions associate theirs with dns_association."
  type        = string
}

variable "region" {
  description = "The primary region."
  type        = string
}

variable "api_lb_dns_name" {
  description = "DNS name of the control plane's internal load balancer (api.<domain> aliases it)."
  type        = string
}

variable "api_lb_zone_id" {
  description = "Hosted zone id of that load balancer."
  type        = string
}

variable "hosts" {
  description = "SSH-reachable machines by name (the physical servers) and their addresses: <name>.<domain> A records."
  type        = map(string)
  default     = {}
}
