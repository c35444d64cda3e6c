output "instance_ids" {
  description = "The gateways' instance ids."
  value       = aws_instance.gateway[*].id
}

output "private_ips" {
  description = "The gateways' private addresses."
  value       = aws_instance.gateway[*].private_ip
}

output "failover_function" {
  description = "Name of the failover Lambda function (invoke it to force a check)."
  value       = aws_lambda_function.failover.function_name
}
