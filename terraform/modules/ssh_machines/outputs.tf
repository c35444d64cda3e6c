output "hosts" {
  description = "Each machine's DNS name and private address (what `lab ssh-config` points at)."
  value       = { for k, r in aws_route53_record.machine : r.fqdn => aws_instance.machine[k].private_ip }
}

output "role_arn" {
  description = "The machines' role: the EFS file-system policy lets it alone mount the SSH machines' access points."
  value       = aws_iam_role.machine.arn
}
