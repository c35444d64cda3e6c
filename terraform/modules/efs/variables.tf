variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "AWS region of the file system."
  type        = string
}

variable "vpc_id" {
  description = "The region's VPC."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnet id per zone; one mount target in each."
  type        = map(string)
}

variable "client_prefix_list_id" {
  description = "Managed prefix list of the networks allowed to mount over NFS (the node networks, from ../network)."
  type        = string
}

variable "job_role_arns" {
  description = "The roles that mount the jobs' access points and /datasets (the EFS CSI node plugin's IRSA role, global output efs_csi_role_arn); every other principal is refused them."
  type        = list(string)

  validation {
    condition     = length(var.job_role_arns) > 0
    error_message = "job_role_arns needs the EFS CSI node plugin's role (global output efs_csi_role_arn)."
  }
}

variable "shell_role_arns" {
  description = "The roles that mount the SSH machines' access points and /datasets (../ssh_machines output role_arn); empty without SSH machines."
  type        = list(string)
  default     = []
}

variable "throughput_mode" {
  description = "EFS throughput mode from cluster.yaml storage.efs (bursting or elastic)."
  type        = string

  validation {
    condition     = contains(["bursting", "elastic"], var.throughput_mode)
    error_message = "throughput_mode must be bursting or elastic (provisioned needs a throughput figure)."
  }
}

variable "kms_key_arn" {
  description = "KMS key encrypting the file system."
  type        = string
}

variable "users" {
  description = "Researchers (cluster.yaml users): each gets access points for /home/<name> and /results/<name>, owned by their uid (gid = uid, as the SSH machines create the group and jobs run with runAsGroup)."
  type = list(object({
    name = string
    uid  = number
  }))
  default = []
}

variable "shell_access_points" {
  description = "Also make the SSH machines' access points (the same directories, no enforced identity)."
  type        = bool
  default     = false
}
