output "topic_arn" {
  description = "The alert topic: alarm actions, budget notifications, AWS Backup notifications, Alertmanager."
  value       = aws_sns_topic.this.arn
}

output "alertmanager_role_arn" {
  description = "The role Alertmanager's ServiceAccount assumes (null without one)."
  value       = length(aws_iam_role.alertmanager) == 0 ? null : aws_iam_role.alertmanager[0].arn
}
