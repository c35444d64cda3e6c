output "api_endpoint" {
  description = "host:port workers join through (the stable DNS name of the API server)."
  value       = local.endpoint
}

output "lb_dns_name" {
  description = "The internal load balancer's DNS name (the private zone's api record aliases it)."
  value       = aws_lb.api.dns_name
}

output "lb_zone_id" {
  description = "The load balancer's hosted zone id (for the alias record)."
  value       = aws_lb.api.zone_id
}

output "private_ips" {
  description = "Private addresses of the control-plane members."
  value       = aws_instance.member[*].private_ip
}

output "status_parameter_prefix" {
  description = "SSM prefix of the members' bootstrap status (<prefix>/member-<i>, JSON), read by `invoke control-plane-status`."
  value       = local.status_prefix
}

output "init_parameter" {
  description = "SSM parameter holding the control plane's kubeadm init state (pending or initialized)."
  value       = aws_ssm_parameter.init.name
}

output "lb_arn_suffix" {
  description = "The API load balancer's ARN suffix (the LoadBalancer dimension of its CloudWatch metrics, ../alarms)."
  value       = aws_lb.api.arn_suffix
}

output "target_group_arn_suffix" {
  description = "The API target group's ARN suffix (the TargetGroup dimension, ../alarms)."
  value       = aws_lb_target_group.api.arn_suffix
}
