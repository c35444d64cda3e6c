output "node_labels" {
  description = "Every label a node of the group registers with: the group's labels plus research.cluster/node-group=<ASG name>."
  value       = local.node_labels
}

output "kubelet_node_labels" {
  description = "The kubelet's --node-labels value (k=v pairs, comma-separated, sorted by key)."
  value       = join(",", [for k in sort(keys(local.node_labels)) : "${k}=${local.node_labels[k]}"])
}

output "kubelet_taints" {
  description = "The kubelet's --register-with-taints value (empty when the group has no taints)."
  value       = join(",", local.taint_args)
}

output "asg_tags" {
  description = "Tags of the Auto Scaling group: discovery, node-template labels, taints and resources, and the priority."
  value = merge(
    local.discovery_tags,
    local.label_tags,
    local.taint_tags,
    local.resource_tags,
    { "research.cluster/priority" = tostring(var.priority) },
  )
}
