output "zone_id" {
  description = "The private zone answering the file system's name in this VPC."
  value       = aws_route53_zone.efs.zone_id
}
