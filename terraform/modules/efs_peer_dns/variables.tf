variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "This (non-primary) region."
  type        = string
}

variable "vpc_id" {
  description = "This region's VPC, the only one associated with the zone."
  type        = string
}

variable "file_system_dns_name" {
  description = "The primary region's file system name, <fs-id>.efs.<primary region>.amazonaws.com (its root's output efs_dns_name)."
  type        = string

  validation {
    condition     = can(regex("^fs-[0-9a-f]+\\.efs\\.[a-z0-9-]+\\.amazonaws\\.com$", var.file_system_dns_name))
    error_message = "file_system_dns_name must be <fs-id>.efs.<region>.amazonaws.com."
  }
}

variable "mount_target_ips" {
  description = "The file system's mount target address per zone (the primary root's output efs_mount_target_ips)."
  type        = map(string)

  validation {
    condition     = length(var.mount_target_ips) > 0
    error_message = "mount_target_ips is empty: the primary region's file system has no mount target yet."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
