# What a node of a group looks like to Kubernetes and to the autoscaler, computed once: the kubelet's
# --node-labels and --register-with-taints, and the Auto Scaling group's discovery and node-template tags
# (names in autoscaler/interfaces.py). Provider-free, so `terraform test` checks it offline.
locals {
  node_group_label = "research.cluster/node-group"
  node_labels      = merge(var.labels, { (local.node_group_label) = var.asg_name })

  taint_args = [
    for t in var.taints : t.value == "" ? "${t.key}:${t.effect}" : "${t.key}=${t.value}:${t.effect}"
  ]

  discovery_tags = {
    "k8s.io/cluster-autoscaler/enabled"        = "true"
    "k8s.io/cluster-autoscaler/${var.cluster}" = "owned"
  }
  label_tags = {
    for k, v in local.node_labels : "k8s.io/cluster-autoscaler/node-template/label/${k}" => v
  }
  taint_tags = {
    for t in var.taints : "k8s.io/cluster-autoscaler/node-template/taint/${t.key}" => "${t.value}:${t.effect}"
  }
  resource_tags = merge(
    var.gpus > 0 ? { "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu" = tostring(var.gpus) } : {},
    # EFA only where the launch template gives the interfaces (modules/node_group, var.efa_interfaces)
    var.efa_interfaces > 0 ? { "k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa" = tostring(var.efa_interfaces) } : {},
  )
}
