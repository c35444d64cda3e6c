output "zone_id" {
  description = "The private zone's id."
  value       = data.aws_route53_zone.cluster.zone_id
}
