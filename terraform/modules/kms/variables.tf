variable "cluster" {
  description = "Cluster name from cluster.yaml; names the key alias."
  type        = string
}

variable "region" {
  description = "AWS region of this key (keys are regional)."
  type        = string
}
