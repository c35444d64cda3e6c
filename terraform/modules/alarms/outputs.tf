output "alarm_names" {
  description = "Every alarm this module made."
  value = concat(
    [for a in aws_cloudwatch_metric_alarm.tunnel_down : a.alarm_name],
    [for a in aws_cloudwatch_metric_alarm.site_cut_off : a.alarm_name],
    aws_cloudwatch_metric_alarm.api_unhealthy[*].alarm_name,
    aws_cloudwatch_metric_alarm.api_quorum[*].alarm_name,
    aws_cloudwatch_metric_alarm.failover_errors[*].alarm_name,
    aws_cloudwatch_metric_alarm.failover_not_running[*].alarm_name,
    aws_cloudwatch_metric_alarm.etcd_snapshots[*].alarm_name,
    [for a in aws_cloudwatch_metric_alarm.certificate_expiry : a.alarm_name],
  )
}
