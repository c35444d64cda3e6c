# AWS Backup for the primary region's state (docs/operations.md, "The primary region"): the EFS file system
# (homes, results, datasets) and the etcd snapshots' bucket, backed up daily into a vault in the primary region
# and copied into a vault in a second region (operations.backups.copy_region), each kept keep_days. Failed
# backups and copies are published to the alert topic. The vaults' keys are their own (one per region).
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  account = data.aws_caller_identity.this.account_id
  p       = data.aws_partition.this.partition
  name    = "${var.cluster}-backups"
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
}

resource "aws_kms_key" "primary" {
  description             = "${local.name}: the primary region's backup vault"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key.json
  tags                    = var.tags
}

resource "aws_kms_key" "copy" {
  provider                = aws.copy
  description             = "${local.name}: the copies' backup vault"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key.json
  tags                    = var.tags
}

resource "aws_backup_vault" "primary" {
  name        = local.name
  kms_key_arn = aws_kms_key.primary.arn
  tags        = var.tags
}

resource "aws_backup_vault" "copy" {
  provider    = aws.copy
  name        = "${local.name}-copy"
  kms_key_arn = aws_kms_key.copy.arn
  tags        = var.tags
}

resource "aws_backup_plan" "this" {
  name = local.name

  rule {
    rule_name         = "daily-with-copy"
    target_vault_name = aws_backup_vault.primary.name
    schedule          = "cron(0 3 * * ? *)" # 03:00 UTC
    start_window      = 60
    completion_window = 480

    lifecycle {
      delete_after = var.keep_days
    }

    copy_action {
      destination_vault_arn = aws_backup_vault.copy.arn
      lifecycle {
        delete_after = var.keep_days
      }
    }
  }

  tags = var.tags
}

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["backup.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "backup" {
  name               = "${var.cluster}-backup"
  description        = "AWS Backup of ${var.cluster}: EFS and the etcd snapshots, copied to ${var.copy_region}"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

# AWS Backup Developer Guide, "Managed policies for AWS Backup": EFS through the general policies, S3 through its own
# (the general ones under service-role/, the S3 ones at the top level: arn:aws:iam::aws:policy/<name>).
resource "aws_iam_role_policy_attachment" "backup" {
  for_each = {
    "AWSBackupServiceRolePolicyForBackup"    = "service-role/"
    "AWSBackupServiceRolePolicyForRestores"  = "service-role/"
    "AWSBackupServiceRolePolicyForS3Backup"  = ""
    "AWSBackupServiceRolePolicyForS3Restore" = ""
  }
  role       = aws_iam_role.backup.name
  policy_arn = "arn:${local.p}:iam::aws:policy/${each.value}${each.key}"
}

# the snapshots are SSE-KMS under the cluster key: AWS Backup reads them through S3
data "aws_iam_policy_document" "cluster_key" {
  statement {
    actions   = ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"]
    resources = [var.cluster_kms_key_arn]
    condition {
      test     = "StringLike"
      variable = "kms:ViaService"
      values   = ["s3.*.amazonaws.com", "elasticfilesystem.*.amazonaws.com"]
    }
  }
}

resource "aws_iam_role_policy" "cluster_key" {
  name   = "cluster-key"
  role   = aws_iam_role.backup.id
  policy = data.aws_iam_policy_document.cluster_key.json
}

resource "aws_backup_selection" "this" {
  name         = "${local.name}-efs-and-etcd"
  plan_id      = aws_backup_plan.this.id
  iam_role_arn = aws_iam_role.backup.arn
  resources    = var.resources
}

resource "aws_backup_vault_notifications" "primary" {
  backup_vault_name   = aws_backup_vault.primary.name
  sns_topic_arn       = var.topic_arn
  backup_vault_events = ["BACKUP_JOB_FAILED", "COPY_JOB_FAILED", "RESTORE_JOB_COMPLETED"]
}
