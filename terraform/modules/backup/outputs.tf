output "vault" {
  description = "The primary region's backup vault."
  value       = aws_backup_vault.primary.name
}

output "copy_vault_arn" {
  description = "The vault in the copy region (a rebuild restores from it: docs/operations.md)."
  value       = aws_backup_vault.copy.arn
}

output "plan_id" {
  description = "The backup plan."
  value       = aws_backup_plan.this.id
}
