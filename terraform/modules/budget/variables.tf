variable "cluster" {
  description = "Cluster name from cluster.yaml; the budget is <cluster>-monthly."
  type        = string
}

variable "monthly_usd" {
  description = "The month's limit in US dollars (cluster.yaml operations.budget.monthly_usd)."
  type        = number
}

variable "forecast_alert_percent" {
  description = "Notify when the month's forecast passes these percentages of the limit."
  type        = list(number)
  default     = [80, 100]
}

variable "actual_alert_percent" {
  description = "Notify when actual spend passes these percentages of the limit."
  type        = list(number)
  default     = [100]

  validation {
    condition     = length(var.actual_alert_percent) + length(var.forecast_alert_percent) <= 10
    error_message = "A budget has at most 10 notifications (forecast and actual together)."
  }
}

variable "topic_arn" {
  description = "The alert topic the notifications go to (../alert_topic)."
  type        = string
}
