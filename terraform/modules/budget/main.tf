# The account's monthly cost budget (docs/operations.md, "Cost"): notifications to the alert topic when the
# month's forecast or its actual spend passes the spec's shares of the limit (AWS Billing and Cost Management User
# Guide, "Creating a cost budget"; a budget has at most 10 notifications, which the spec's check enforces). The
# budget covers the whole account: cost allocation tags would need activating in the payer account first.
resource "aws_budgets_budget" "monthly" {
  name         = "${var.cluster}-monthly"
  budget_type  = "COST"
  limit_amount = format("%.2f", var.monthly_usd)
  limit_unit   = "USD"
  time_unit    = "MONTHLY"

  dynamic "notification" {
    for_each = var.forecast_alert_percent
    content {
      notification_type         = "FORECASTED"
      comparison_operator       = "GREATER_THAN"
      threshold                 = notification.value
      threshold_type            = "PERCENTAGE"
      subscriber_sns_topic_arns = [var.topic_arn]
    }
  }

  dynamic "notification" {
    for_each = var.actual_alert_percent
    content {
      notification_type         = "ACTUAL"
      comparison_operator       = "GREATER_THAN"
      threshold                 = notification.value
      threshold_type            = "PERCENTAGE"
      subscriber_sns_topic_arns = [var.topic_arn]
    }
  }
}
