variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "name" {
  description = "The Auto Scaling group's name, <cluster>-<region>-<group> (Cluster.asg_name); the planner's group name."
  type        = string
}

variable "instance_types" {
  description = "Instance types; the first is the primary, more only for spot groups (mixed-instances policy)."
  type        = list(string)

  validation {
    condition     = length(var.instance_types) >= 1
    error_message = "instance_types needs at least one instance type."
  }
}

variable "spot" {
  description = "Run on spot capacity through a mixed-instances policy."
  type        = bool
  default     = false
}

variable "min_size" {
  description = "Minimum group size (also the initial desired capacity; the autoscaler owns desired after that)."
  type        = number
}

variable "max_size" {
  description = "Maximum group size."
  type        = number
}

variable "labels" {
  description = "The group's node labels from cluster.yaml."
  type        = map(string)
  default     = {}
}

variable "taints" {
  description = "The group's taints from cluster.yaml."
  type = list(object({
    key    = string
    value  = string
    effect = string
  }))
  default = []
}

variable "gpus" {
  description = "GPUs per instance (the nvidia.com/gpu node-template tag for scale from zero)."
  type        = number
  default     = 0
}

variable "priority" {
  description = "The group's priority for the planner."
  type        = number
  default     = 0
}

variable "root_volume_gib" {
  description = "Size of the encrypted gp3 root volume."
  type        = number
  default     = 200
}

variable "subnet_ids" {
  description = "Private subnet ids the group spreads over."
  type        = list(string)
}

variable "subnet_ids_by_zone" {
  description = "The same private subnets by availability zone: an EFA group launches in one of them (the zone that offers its instance types)."
  type        = map(string)
  default     = {}
}

variable "security_group_ids" {
  description = "Security groups of the nodes (the cluster security group)."
  type        = list(string)
}

variable "instance_profile_name" {
  description = "The node instance profile (from the global root's iam module)."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key encrypting the root volume."
  type        = string
}

variable "ami_id" {
  description = "The baked GPU AMI's id from build/ami/<region>.json; empty to resolve the SSM parameter at launch."
  type        = string
  default     = ""
}

variable "ami_ssm_parameter" {
  description = "SSM parameter holding the baked AMI's id (/<cluster>/ami/gpu-worker)."
  type        = string
}

variable "api_endpoint" {
  description = "host:port of the control plane's internal load balancer."
  type        = string
}

variable "join_region" {
  description = "Region of the kubeadm join parameters (the primary region)."
  type        = string
}

variable "node_keys_bucket" {
  description = "Where nodes publish their kubelet keys' hashes (../node_join, ../etcd_backup)."
  type        = string
}

variable "join_token_parameter" {
  description = "SSM SecureString with the kubeadm join token."
  type        = string
}

variable "ca_hash_parameter" {
  description = "SSM SecureString with the cluster CA's public-key hash (sha256:...)."
  type        = string
}

variable "kubelet_reserved" {
  description = "Instance type => the kubelet's maxPods, kubeReserved, systemReserved and evictionHard (clusterspec/kubelet_reserved.py), for every type of the group."
  type        = map(any)
}

variable "efa_interfaces" {
  description = "EFA interfaces per node (the fewest among the group's instance types; 0: no EFA)."
  type        = number
  default     = 0
}

variable "vpc_id" {
  description = "The VPC (for the EFA security group)."
  type        = string
}
