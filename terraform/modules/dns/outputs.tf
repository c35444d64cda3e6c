output "zone_id" {
  description = "The private zone's id."
  value       = aws_route53_zone.this.zone_id
}

output "api_fqdn" {
  description = "The API server's name."
  value       = aws_route53_record.api.fqdn
}
