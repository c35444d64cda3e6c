# Where alerts go (docs/operations.md, "Alerts"): an SNS topic subscribed to the spec's one destination
# (operations.alerts: an email address or an HTTPS webhook). CloudWatch alarms, the budget and AWS Backup publish
# to it; in the primary region Prometheus' Alertmanager does too, through its own role (IAM roles for service
# accounts). The topic is encrypted with a key of its own whose policy lets those services use it (Amazon SNS
# Developer Guide, "Enable compatibility between event sources from AWS services and encrypted topics").
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  account    = data.aws_caller_identity.this.account_id
  p          = data.aws_partition.this.partition
  publishers = ["cloudwatch.amazonaws.com", "budgets.amazonaws.com", "backup.amazonaws.com"]
}

data "aws_iam_policy_document" "key" {
  #checkov:skip=CKV_AWS_109:A key policy's "*" resource means this key; the account statement delegates to IAM.
  #checkov:skip=CKV_AWS_111:A key policy's "*" resource means this key; the account statement delegates to IAM.
  #checkov:skip=CKV_AWS_356:A key policy's "*" resource means this key itself, not every resource.
  statement {
    sid       = "AccountAdministersThroughIam"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.p}:iam::${local.account}:root"]
    }
  }

  statement {
    sid       = "AwsServicesPublishAlerts"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = local.publishers
    }
  }
}

resource "aws_kms_key" "this" {
  description             = "${var.name}: the alert topic"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key.json
  tags                    = var.tags
}

resource "aws_kms_alias" "this" {
  name          = "alias/${var.name}"
  target_key_id = aws_kms_key.this.key_id
}

resource "aws_sns_topic" "this" {
  name              = var.name
  kms_master_key_id = aws_kms_key.this.arn
  tags              = var.tags
}

data "aws_iam_policy_document" "topic" {
  statement {
    sid       = "AccountManagesTheTopic"
    actions   = ["sns:Publish", "sns:Subscribe", "sns:GetTopicAttributes", "sns:SetTopicAttributes", "sns:ListSubscriptionsByTopic"]
    resources = [aws_sns_topic.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.p}:iam::${local.account}:root"]
    }
  }

  statement {
    sid       = "AwsServicesOfThisAccountPublish"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.this.arn]
    principals {
      type        = "Service"
      identifiers = local.publishers
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_sns_topic_policy" "this" {
  arn    = aws_sns_topic.this.arn
  policy = data.aws_iam_policy_document.topic.json
}

resource "aws_sns_topic_subscription" "email" {
  count     = var.email == "" ? 0 : 1
  topic_arn = aws_sns_topic.this.arn
  protocol  = "email" # SNS mails a confirmation link once; until it is followed nothing is delivered
  endpoint  = var.email
}

resource "aws_sns_topic_subscription" "webhook" {
  count                  = var.webhook == "" ? 0 : 1
  topic_arn              = aws_sns_topic.this.arn
  protocol               = "https" # the endpoint confirms the subscription (SubscribeURL) once
  endpoint               = var.webhook
  endpoint_auto_confirms = false
}

# Alertmanager (deploy/monitoring) publishes here with a role its ServiceAccount assumes through the cluster's OIDC
# issuer (IAM roles for service accounts, ../service_account_issuer): only monitoring/alertmanager, only this topic.
data "aws_iam_policy_document" "alertmanager_assume" {
  count = var.alertmanager == null ? 0 : 1
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = [var.alertmanager.provider_arn]
    }
    condition {
      test     = "StringEquals"
      variable = "${var.alertmanager.issuer}:sub"
      values   = ["system:serviceaccount:${var.alertmanager.namespace}:${var.alertmanager.service_account}"]
    }
    condition {
      test     = "StringEquals"
      variable = "${var.alertmanager.issuer}:aud"
      values   = ["sts.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "alertmanager" {
  statement {
    sid       = "PublishAlerts"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.this.arn]
  }

  statement {
    sid       = "EncryptForTheTopic"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [aws_kms_key.this.arn]
  }
}

resource "aws_iam_role" "alertmanager" {
  count              = var.alertmanager == null ? 0 : 1
  name               = "${var.cluster}-alertmanager"
  description        = "Alertmanager of ${var.cluster}: publishes to ${var.name}"
  assume_role_policy = data.aws_iam_policy_document.alertmanager_assume[0].json
  tags               = var.tags
}

resource "aws_iam_role_policy" "alertmanager" {
  count  = var.alertmanager == null ? 0 : 1
  name   = "publish-alerts"
  role   = aws_iam_role.alertmanager[0].id
  policy = data.aws_iam_policy_document.alertmanager.json
}
