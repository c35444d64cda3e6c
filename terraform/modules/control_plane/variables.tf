variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "The primary region (hosts the control plane and the join parameters)."
  type        = string
}

variable "instance_count" {
  description = "Number of control-plane instances (1, 3 or 5; spread over the zones)."
  type        = number

  validation {
    condition     = contains([1, 3, 5], var.instance_count)
    error_message = "instance_count must be 1, 3 or 5 (etcd needs an odd quorum)."
  }
}

variable "instance_type" {
  description = "Control-plane instance type."
  type        = string
}

variable "vpc_id" {
  description = "The primary region's VPC."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnet id per zone; instances go round-robin over them, the load balancer spans them all."
  type        = map(string)
}

variable "etcd_security_group_id" {
  description = "The members' own security group (etcd client and peer ports between members), from ../network."
  type        = string
}

variable "security_group_id" {
  description = "The cluster security group."
  type        = string
}

variable "vpc_cidr" {
  description = "The primary VPC's CIDR (etcd peers talk within it)."
  type        = string
}

variable "instance_profile_name" {
  description = "The control-plane instance profile (from the global root's iam module)."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key for the root volumes and the join SecureStrings."
  type        = string
}

variable "ami_id" {
  description = "The baked AMI's id from build/ami/<region>.json; empty to read the SSM parameter."
  type        = string
  default     = ""
}

variable "ami_ssm_parameter" {
  description = "SSM parameter holding the baked AMI's id (/<cluster>/ami/gpu-worker)."
  type        = string
}

variable "kubernetes_version" {
  description = "Kubernetes version, e.g. 1.31.4."
  type        = string
}

variable "pod_cidr" {
  description = "flannel's pod network."
  type        = string
}

variable "service_cidr" {
  description = "The service network."
  type        = string
}

variable "api_dns_name" {
  description = "Stable DNS name of the API server in the private zone (api.<domain>)."
  type        = string
}

variable "join_parameter_prefix" {
  description = "SSM prefix of the kubeadm parameters (/<cluster>/kubeadm): join-token, ca-cert-hash, certificate-key."
  type        = string
}

variable "flannel_manifest" {
  description = "flannel's objects (provision/flannel.py: the pod network and MTU filled in, images by digest); member 0 applies them. Kept in the repository: nothing is downloaded at boot."
  type        = string
}

variable "scheduler_config" {
  description = "KubeSchedulerConfiguration of the control plane's kube-scheduler (provision/scheduler.py: MostAllocated, GPUs weighted highest)"
  type        = string
}

variable "scheduler_config_file" {
  description = "Where every member writes scheduler_config (the kube-scheduler static pod mounts its directory read-only)"
  type        = string
}

variable "scheduler_kubeadm" {
  description = "The scheduler block of kubeadm's ClusterConfiguration (v1beta4) that makes kube-scheduler load scheduler_config_file"
  type        = string
}

variable "service_account_issuer" {
  description = "The S3-published OIDC issuer that service-account tokens carry, for IAM roles for service accounts (global output service_account_issuer_url); empty keeps kubeadm's in-cluster issuer"
  type        = string
  default     = ""
}

variable "etcd_backup" {
  description = "etcd snapshots (../etcd_backup, docs/operations.md \"etcd\"): bucket, hours between snapshots, the SSM record and the CloudWatch namespace; an empty bucket: no snapshots"
  type = object({
    bucket           = string
    every_h          = number
    status_parameter = string
    metric_namespace = string
  })
  default = { bucket = "", every_h = 6, status_parameter = "", metric_namespace = "" }
}
