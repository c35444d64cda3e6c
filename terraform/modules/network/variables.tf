variable "cluster" {
  description = "Cluster name from cluster.yaml; prefixes every name."
  type        = string
}

variable "region" {
  description = "AWS region of this VPC."
  type        = string
}

variable "vpc_cidr" {
  description = "The region's VPC CIDR from cluster.yaml."
  type        = string
}

variable "zones" {
  description = "Availability zones in spec order (the order fixes each zone's subnet numbers)."
  type        = list(string)
}

variable "cluster_cidrs" {
  description = "Every network allowed to reach cluster services: all VPCs, the physical sites, the pod network and the client VPN pool."
  type        = list(string)
}

variable "node_cidrs" {
  description = "The networks nodes have their addresses in (every VPC and the physical sites): flannel VXLAN and NFS."
  type        = list(string)
}

variable "kms_key_arn" {
  description = "The region's cluster KMS key, for the flow-log group."
  type        = string
}

variable "log_retention_days" {
  description = "How long flow logs are kept in CloudWatch Logs."
  type        = number
  default     = 365
}
