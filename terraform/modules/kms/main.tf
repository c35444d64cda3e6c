# One customer-managed key per region for what the cluster encrypts at rest there: EBS root volumes, EFS, the
# flow and VPN connection logs, and the SSM SecureStrings (kubeadm join token, VPN pre-shared keys).
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  account = data.aws_caller_identity.this.account_id
  arn     = data.aws_partition.this.partition
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
      identifiers = ["arn:${local.arn}:iam::${local.account}:root"]
    }
  }

  statement {
    sid       = "CloudWatchLogsEncryptsClusterLogGroups"
    actions   = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["logs.${var.region}.amazonaws.com"]
    }
    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.arn}:logs:${var.region}:${local.account}:log-group:/${var.cluster}/*"]
    }
  }

  statement {
    sid       = "AutoScalingLaunchesEncryptedVolumes"
    actions   = ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.arn}:iam::${local.account}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"]
    }
  }

  statement {
    sid       = "AutoScalingGrantsToEc2"
    actions   = ["kms:CreateGrant"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.arn}:iam::${local.account}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"]
    }
    condition {
      test     = "Bool"
      variable = "kms:GrantIsForAWSResource"
      values   = ["true"]
    }
  }
}

resource "aws_kms_key" "this" {
  description             = "${var.cluster} ${var.region}: EBS, EFS, logs and SSM SecureStrings"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key.json
}

resource "aws_kms_alias" "this" {
  name          = "alias/${var.cluster}"
  target_key_id = aws_kms_key.this.key_id
}
