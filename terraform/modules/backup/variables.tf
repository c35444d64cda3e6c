variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "copy_region" {
  description = "Where the copies go (cluster.yaml operations.backups.copy_region); the aws.copy provider's region."
  type        = string
}

variable "keep_days" {
  description = "Days backups and their copies are kept (cluster.yaml operations.backups.keep_days)."
  type        = number

  validation {
    condition     = var.keep_days >= 1
    error_message = "keep_days must be at least 1."
  }
}

variable "resources" {
  description = "ARNs to back up: the primary region's EFS file system and the etcd snapshots' bucket."
  type        = list(string)
}

variable "cluster_kms_key_arn" {
  description = "The region's cluster key, under which the snapshots and EFS are encrypted."
  type        = string
}

variable "topic_arn" {
  description = "The alert topic in the primary region (failed backups and copies)."
  type        = string
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
