output "endpoint_id" {
  description = "The inbound endpoint's id."
  value       = aws_route53_resolver_endpoint.inbound.id
}

output "inbound_ips" {
  description = "The endpoint's addresses, sorted: the DNS servers the sites forward the cluster's domain to."
  value       = sort([for a in aws_route53_resolver_endpoint.inbound.ip_address : a.ip])
}
