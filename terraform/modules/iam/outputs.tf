output "node_instance_profile" {
  description = "Instance profile of the workers."
  value       = aws_iam_instance_profile.node.name
}

output "control_plane_instance_profile" {
  description = "Instance profile of the control plane."
  value       = aws_iam_instance_profile.control_plane.name
}

output "autoscaler_role_arn" {
  description = "Role the autoscaler assumes with its ServiceAccount token (AWS_ROLE_ARN, IRSA)."
  value       = aws_iam_role.autoscaler.arn
}

output "image_builder_role_arn" {
  description = "Role Packer builds assume."
  value       = aws_iam_role.image_builder.arn
}

output "node_role_arn" {
  description = "The workers' role (the EFS file-system policy grants it root access)."
  value       = aws_iam_role.node.arn
}

output "control_plane_role_arn" {
  description = "The control plane's role (the EFS file-system policy grants it root access)."
  value       = aws_iam_role.control_plane.arn
}
