output "bucket_arns" {
  description = "Bucket ARN by purpose (datasets, results, ..., access-logs)."
  value       = { for k, b in aws_s3_bucket.this : k => b.arn }
}

output "kms_key_arn" {
  description = "The buckets' KMS key (readers and writers need kms:Decrypt / GenerateDataKey on it)."
  value       = aws_kms_key.s3.arn
}

output "bucket_names" {
  description = "Bucket name by purpose."
  value       = { for k, b in aws_s3_bucket.this : k => b.bucket }
}
