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
  description = "The workers' role."
  value       = aws_iam_role.node.arn
}

output "control_plane_role_arn" {
  description = "The control plane's role."
  value       = aws_iam_role.control_plane.arn
}

output "operator_role_arn" {
  description = "Role operators assume for `invoke kubeconfig`, `invoke publish-oidc` and Session Manager."
  value       = aws_iam_role.operator.arn
}

output "session_manager_policy_arn" {
  description = "The Session Manager agent's permissions (attached to every cluster instance's role)."
  value       = aws_iam_policy.session_manager.arn
}

output "efs_csi_role_arn" {
  description = "The EFS CSI node plugin's role (IRSA): the only principal the file-system policy lets mount the jobs' access points."
  value       = aws_iam_role.efs_csi.arn
}
