variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "The primary region (the control plane's)."
  type        = string
}

variable "kms_key_arn" {
  description = "The region's cluster key (../kms): every snapshot is encrypted with it."
  type        = string
}

variable "keep_days" {
  description = "Days a snapshot is kept (cluster.yaml operations.backups.keep_days)."
  type        = number

  validation {
    condition     = var.keep_days >= 1
    error_message = "keep_days must be at least 1."
  }
}

variable "control_plane_role_name" {
  description = "The control plane's IAM role (global root, ../iam): it writes the snapshots."
  type        = string
}

variable "node_role_name" {
  description = "The nodes' role (<cluster>-node): may put its instances' own node-keys/<aws:userid> objects."
  type        = string
}

variable "tags" {
  description = "Tags added to the bucket."
  type        = map(string)
  default     = {}
}
