variable "join_region" {
  description = "Region of the kubeadm join parameters (the primary region)."
  type        = string
}

variable "node_keys_bucket" {
  description = "Bucket (in join_region) where the node publishes its kubelet key's hash at node-keys/<aws:userid> (../etcd_backup; the CSR approver checks it)."
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

variable "api_endpoint" {
  description = "host:port of the API server (api.<domain>:6443)."
  type        = string
}

variable "node_labels" {
  description = "The kubelet's --node-labels (k=v,...); the zone, region and instance-type labels are added at boot."
  type        = string
}

variable "taints" {
  description = "The kubelet's --register-with-taints (k=v:Effect,...), or empty."
  type        = string
  default     = ""
}

variable "kubelet_reserved" {
  description = "Instance type => KubeletConfiguration fields (maxPods, kubeReserved, systemReserved, evictionHard) from clusterspec/kubelet_reserved.py."
  type        = map(any)
}

variable "prelude" {
  description = "Shell run once before the join unit is installed (the pod gateway's forwarding and NAT)."
  type        = string
  default     = ""
}
