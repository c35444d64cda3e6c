output "hosts" {
  description = "Each machine's DNS name and private address (what `lab ssh-config` points at)."
  value       = { for k, r in aws_route53_record.machine : r.fqdn => aws_instance.machine[k].private_ip }
}
