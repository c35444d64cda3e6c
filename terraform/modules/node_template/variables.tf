variable "cluster" {
  description = "Cluster name from cluster.yaml (the discovery tag is k8s.io/cluster-autoscaler/<cluster>)."
  type        = string
}

variable "asg_name" {
  description = "The Auto Scaling group's name, <cluster>-<region>-<group> (Cluster.asg_name); also the node-group label's value."
  type        = string
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

  validation {
    condition     = alltrue([for t in var.taints : contains(["NoSchedule", "PreferNoSchedule", "NoExecute"], t.effect)])
    error_message = "taint effect must be NoSchedule, PreferNoSchedule or NoExecute."
  }
}

variable "gpus" {
  description = "GPUs per instance of the group's instance type (0 for CPU groups)."
  type        = number
  default     = 0
}

variable "priority" {
  description = "The group's priority for the planner (research.cluster/priority)."
  type        = number
  default     = 0
}

variable "efa_interfaces" {
  description = "EFA interfaces the group's launch template gives each node (0: none; the group offers no vpc.amazonaws.com/efa)."
  type        = number
  default     = 0
}
