variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "domain" {
  description = "The cluster's private domain; machines are <group>-<n>.ssh.<domain>."
  type        = string
}

variable "zone_id" {
  description = "The private hosted zone of the domain."
  type        = string
}

variable "vpc_id" {
  description = "The primary region's VPC."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnet id per zone; machines are spread over them."
  type        = map(string)
}

variable "client_security_group_id" {
  description = "The Client VPN endpoint's security group (../client_vpn output security_group_id): laptops reach SSH from its interfaces."
  type        = string
}

variable "groups" {
  description = "SSH machine groups (researchers.ssh_machines): name, instance type, count, GPUs."
  type = list(object({
    name          = string
    instance_type = string
    count         = number
    gpus          = number
  }))
}

variable "users" {
  description = "Researchers with their uid and SSH public keys (cluster.yaml users)."
  type = list(object({
    name     = string
    uid      = number
    ssh_keys = list(string)
  }))
}

variable "efs_file_system_id" {
  description = "The region's EFS file system (fs-...); mounted by id with amazon-efs-utils, which resolves the mount target in the machine's own zone."
  type        = string
}

variable "efs_file_system_arn" {
  description = "The file system's ARN: the resource of the machines' ClientMount and ClientWrite permission."
  type        = string
}

variable "efs_access_points" {
  description = "Per researcher, the SSH machines' access point ids of their home and results (../efs output shell_access_points)."
  type = map(object({
    home    = string
    results = string
  }))
}

variable "efs_datasets_access_point" {
  description = "The access point id of /datasets, mounted at <efs_mount>/datasets."
  type        = string
}

variable "efs_access_point_arns" {
  description = "ARNs of every access point the machines mount (their role may mount through these only)."
  type        = list(string)
}

variable "efs_utils_version" {
  description = "Release tag of aws/efs-utils built on the machines (Ubuntu has no package); the source is taken by efs_utils_commit, never by the tag."
  type        = string
  default     = "v2.3.2"
}

variable "efs_utils_commit" {
  description = "The commit of aws/efs-utils that efs_utils_version tags (a tag can be moved; a commit cannot)."
  type        = string
  default     = "e9ff0e1596f8ac566063659cda60290339216727"

  validation {
    condition     = can(regex("^[0-9a-f]{40}$", var.efs_utils_commit))
    error_message = "The efs_utils_commit must be a full 40-hex commit id."
  }
}

variable "efs_utils_sha256" {
  description = "SHA-256 of that commit's content (scripts/efs_utils.sh tree_sha256: sha256sum of every tracked file, in path order, hashed again); checked before the build."
  type        = string
  default     = "671b3c4c62b683d659c584c13846316a76eb546987da04c1e5e01d748573ed87"

  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.efs_utils_sha256))
    error_message = "The efs_utils_sha256 must be 64 hex digits."
  }
}

variable "cluster_cidrs" {
  description = "The cluster's networks (VPCs, sites, pods, VPN pool): the machines may reach them on any port (EFS, the API server)."
  type        = list(string)
}

variable "gpu_ami_id" {
  description = "AMI of the GPU machines (the baked GPU image, driver and CUDA from the spec); empty to resolve gpu_ami_ssm_parameter."
  type        = string
}

variable "gpu_ami_ssm_parameter" {
  description = "SSM parameter holding the baked GPU image's id."
  type        = string
}

variable "cpu_ami_ssm_parameter" {
  description = "SSM parameter with the Ubuntu image of CPU machines."
  type        = string
  default     = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
}

variable "root_volume_gib" {
  description = "Root volume size."
  type        = number
  default     = 200
}

variable "kms_key_arn" {
  description = "KMS key for the root volumes."
  type        = string
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

variable "efs_mount" {
  description = "Where the SSH machines mount the shared EFS directories (cluster.yaml storage.efs.mount): <efs_mount>/datasets and <efs_mount>/results/<user>; homes are mounted at /home/<user>."
  type        = string
  default     = "/mnt/efs"
}

variable "idle_stop_min" {
  description = "A machine with no SSH session, no GPU and no CPU use this many minutes powers itself off (stops; cluster.yaml operations.ssh_idle_stop_min); 0: never."
  type        = number
  default     = 0

  validation {
    condition     = var.idle_stop_min >= 0
    error_message = "idle_stop_min must be 0 (never) or a number of minutes."
  }
}
