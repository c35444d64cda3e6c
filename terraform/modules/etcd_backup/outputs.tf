output "bucket" {
  description = "The snapshots' bucket (the members' BUCKET, invoke etcd-backup and etcd-restore)."
  value       = aws_s3_bucket.this.bucket
}

output "bucket_arn" {
  description = "The bucket's ARN (AWS Backup's selection, ../backup)."
  value       = aws_s3_bucket.this.arn
}

output "status_parameter" {
  description = "SSM parameter the script records the last snapshot in."
  value       = local.parameter
}

output "metric_namespace" {
  description = "CloudWatch namespace of the SnapshotSucceeded count (../alarms: no snapshot for twice the interval)."
  value       = local.namespace
}
