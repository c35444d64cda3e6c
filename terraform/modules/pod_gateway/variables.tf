variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "The primary region (where the Client VPN endpoint lands)."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnet id per zone; gateways are spread over them."
  type        = map(string)
}

variable "route_table_ids" {
  description = "Every route table of the VPC that must send the pod network to the active gateway, by a static key (e.g. the zone)."
  type        = map(string)
}

variable "security_group_ids" {
  description = "Security groups of the gateways (the cluster group: flannel VXLAN and traffic from the VPN pool)."
  type        = list(string)
}

variable "pod_cidr" {
  description = "The flannel pod network (kubernetes.pod_cidr)."
  type        = string
}

variable "client_cidrs" {
  description = "Networks outside the overlay that reach pods through the gateway (the VPC, where Client VPN traffic is translated to its interfaces, the VPN pool, the sites): admitted on every port and masqueraded, so pods reply through it."
  type        = list(string)
}

variable "vpc_id" {
  description = "The primary region's VPC (the gateways' forwarding security group)."
  type        = string
}

variable "instance_type" {
  description = "Gateway instance type (researchers.pod_gateway.instance_type)."
  type        = string
}

variable "instance_count" {
  description = "Gateways: one active, the others standing by."
  type        = number

  validation {
    condition     = var.instance_count >= 1 && var.instance_count <= 4
    error_message = "instance_count must be 1 to 4."
  }
}

variable "instance_profile_name" {
  description = "Instance profile of cluster nodes (reads the kubeadm join parameters)."
  type        = string
}

variable "ami_id" {
  description = "Baked node AMI id; empty to resolve ami_ssm_parameter at launch."
  type        = string
}

variable "ami_ssm_parameter" {
  description = "SSM parameter holding the baked node AMI id."
  type        = string
}

variable "api_endpoint" {
  description = "The API server, host:port."
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
  description = "SSM SecureString with the kubeadm discovery CA hash."
  type        = string
}

variable "failover_zip" {
  description = "Path of the failover function's zip (failover/failover.py), written by `invoke render`."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key for root volumes and the failover function's logs."
  type        = string
}

variable "failover_schedule" {
  description = "How often the failover function checks the gateways (an EventBridge schedule expression)."
  type        = string
  default     = "rate(1 minute)"
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

variable "kubelet_reserved" {
  description = "The gateway instance type => the kubelet's reservations (clusterspec/kubelet_reserved.py)."
  type        = map(any)
}

variable "root_volume_gib" {
  description = "Root volume size: at least the baked image's root snapshot (clusterspec/names.py IMAGE_ROOT_GIB)."
  type        = number
}
