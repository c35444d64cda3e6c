output "asg_name" {
  description = "The Auto Scaling group's name."
  value       = aws_autoscaling_group.this.name
}

output "asg_arn" {
  description = "The Auto Scaling group's ARN."
  value       = aws_autoscaling_group.this.arn
}

output "launch_template_id" {
  description = "The launch template's id."
  value       = aws_launch_template.this.id
}

output "node_labels" {
  description = "Labels every node of the group registers with."
  value       = module.node_template.node_labels
}
