# CloudWatch alarms of one region (docs/operations.md, "Alerts"), every one sending to the region's alert topic
# (../alert_topic) when it fires and when it clears:
#   - each site-to-site VPN connection: a tunnel down, and the site cut off (both down): AWS/VPN TunnelState
#     (1 up, 0 down; between for a connection with one tunnel down: AWS Site-to-Site VPN User Guide, "Monitoring
#     your Site-to-Site VPN tunnels using Amazon CloudWatch"), missing data counts as down;
#   - the primary region: the API load balancer's targets unhealthy, and fewer healthy members than a quorum
#     (AWS/NetworkELB); the pod gateway's failover Lambda failing, or not running every minute (AWS/Lambda);
#     no etcd snapshot for twice the interval (the script's SnapshotSucceeded count); the Client VPN's ACM
#     certificates expiring (AWS/CertificateManager DaysToExpiry).
locals {
  actions = [var.topic_arn]
  name    = "${var.cluster}-${var.region}"
  # CloudWatch: period at most a day for an alarm; evaluation over more periods beyond that
  etcd_window = var.etcd == null ? 0 : 2 * var.etcd.every_h * 3600
  etcd_period = min(86400, local.etcd_window)
}

resource "aws_cloudwatch_metric_alarm" "tunnel_down" {
  for_each            = var.vpn_connections
  alarm_name          = "${local.name}-vpn-${each.key}-tunnel-down"
  alarm_description   = "A site-to-site VPN tunnel to ${each.key} is down for 10 minutes (the other one carries the traffic): docs/operations.md"
  namespace           = "AWS/VPN"
  metric_name         = "TunnelState"
  dimensions          = { VpnId = each.value }
  statistic           = "Minimum"
  period              = 300
  evaluation_periods  = 2
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "site_cut_off" {
  for_each            = var.vpn_connections
  alarm_name          = "${local.name}-vpn-${each.key}-down"
  alarm_description   = "Both VPN tunnels to ${each.key} are down for 5 minutes: the site's servers are cut off from ${var.region}"
  namespace           = "AWS/VPN"
  metric_name         = "TunnelState"
  dimensions          = { VpnId = each.value }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  threshold           = 0
  comparison_operator = "LessThanOrEqualToThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "api_unhealthy" {
  count               = var.api == null ? 0 : 1
  alarm_name          = "${local.name}-api-targets-unhealthy"
  alarm_description   = "A control-plane member fails the API load balancer's /readyz check for 3 minutes"
  namespace           = "AWS/NetworkELB"
  metric_name         = "UnHealthyHostCount"
  dimensions          = { LoadBalancer = var.api.load_balancer, TargetGroup = var.api.target_group }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "api_quorum" {
  count               = var.api == null ? 0 : 1
  alarm_name          = "${local.name}-api-below-quorum"
  alarm_description   = "Fewer than ${floor(var.api.members / 2) + 1} of ${var.api.members} control-plane members are healthy: etcd has lost (or is about to lose) its quorum; docs/operations.md, etcd restore"
  namespace           = "AWS/NetworkELB"
  metric_name         = "HealthyHostCount"
  dimensions          = { LoadBalancer = var.api.load_balancer, TargetGroup = var.api.target_group }
  statistic           = "Minimum"
  period              = 60
  evaluation_periods  = 3
  threshold           = floor(var.api.members / 2) + 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "failover_errors" {
  count               = var.failover_function == "" ? 0 : 1
  alarm_name          = "${local.name}-pod-gateway-failover-errors"
  alarm_description   = "The pod gateway's failover function ${var.failover_function} fails: the pod network's routes may point at a dead gateway"
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = var.failover_function }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "failover_not_running" {
  count               = var.failover_function == "" ? 0 : 1
  alarm_name          = "${local.name}-pod-gateway-failover-not-running"
  alarm_description   = "The pod gateway's failover function ${var.failover_function} has not run for 10 minutes (its schedule is every minute)"
  namespace           = "AWS/Lambda"
  metric_name         = "Invocations"
  dimensions          = { FunctionName = var.failover_function }
  statistic           = "Sum"
  period              = 600
  evaluation_periods  = 1
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "etcd_snapshots" {
  count               = var.etcd == null ? 0 : 1
  alarm_name          = "${local.name}-etcd-snapshots-missing"
  alarm_description   = "No etcd snapshot reached S3 for ${2 * var.etcd.every_h} h (twice the interval): see the members' cluster-etcd-backup.service"
  namespace           = var.etcd.namespace
  metric_name         = "SnapshotSucceeded"
  statistic           = "Sum"
  period              = local.etcd_period
  evaluation_periods  = ceil(local.etcd_window / local.etcd_period)
  threshold           = 1
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "breaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}

resource "aws_cloudwatch_metric_alarm" "certificate_expiry" {
  for_each            = var.certificates
  alarm_name          = "${local.name}-certificate-${each.key}-expiring"
  alarm_description   = "The ${each.key} certificate in ACM expires in less than ${var.warn_days} days: docs/operations.md, Certificates"
  namespace           = "AWS/CertificateManager"
  metric_name         = "DaysToExpiry"
  dimensions          = { CertificateArn = each.value }
  statistic           = "Minimum"
  period              = 86400
  evaluation_periods  = 1
  threshold           = var.warn_days
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.actions
  ok_actions          = local.actions
}
