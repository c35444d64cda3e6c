output "key_arn" {
  description = "ARN of the region's cluster key."
  value       = aws_kms_key.this.arn
}

output "key_id" {
  description = "Id of the region's cluster key."
  value       = aws_kms_key.this.key_id
}

output "alias" {
  description = "The key's alias (alias/<cluster>), which the IAM policies name."
  value       = aws_kms_alias.this.name
}
