output "name" {
  description = "The budget's name (invoke cost reads it)."
  value       = aws_budgets_budget.monthly.name
}
