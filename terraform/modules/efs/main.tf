# EFS for home directories and datasets: encrypted, backed up, a mount target in every private subnet, NFS only
# from the node networks, TLS only, and root only for the cluster's roles.
locals {
  name = "${var.cluster}-${var.region}"
}

resource "aws_efs_file_system" "this" {
  creation_token  = local.name
  encrypted       = true
  kms_key_id      = var.kms_key_arn
  throughput_mode = var.throughput_mode

  lifecycle_policy {
    transition_to_ia = "AFTER_30_DAYS"
  }

  tags = { Name = local.name }
}

resource "aws_efs_backup_policy" "this" {
  file_system_id = aws_efs_file_system.this.id

  backup_policy {
    status = "ENABLED"
  }
}

resource "aws_security_group" "nfs" {
  name        = "${local.name}-efs"
  description = "EFS mount targets: NFS from the node networks"
  vpc_id      = var.vpc_id
  tags        = { Name = "${local.name}-efs" }
}

resource "aws_vpc_security_group_ingress_rule" "nfs" {
  security_group_id = aws_security_group.nfs.id
  description       = "NFS from the node networks"
  prefix_list_id    = var.client_prefix_list_id
  ip_protocol       = "tcp"
  from_port         = 2049
  to_port           = 2049
}

# The file-system policy (Amazon EFS User Guide, "Using IAM to control file system data access" and its
# example policies): without one, any client that reaches a mount target has root. With it:
# - every request without TLS is denied (aws:SecureTransport; mount with -o tls);
# - any client may mount and write through a mount target (the security group decides who reaches one), but
#   ClientRootAccess is granted only to the cluster's roles, so other clients are root-squashed;
# - ClientRootAccess is denied to every other principal, anonymous (non-IAM) mounts included: a negated
#   condition operator matches when aws:PrincipalArn is absent.
data "aws_iam_policy_document" "efs" {
  statement {
    sid       = "DenyWithoutTls"
    effect    = "Deny"
    actions   = ["*"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }

  statement {
    sid       = "MountThroughMountTargets"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "elasticfilesystem:AccessedViaMountTarget"
      values   = ["true"]
    }
  }

  statement {
    sid       = "RootForClusterRoles"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite", "elasticfilesystem:ClientRootAccess"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = var.root_access_role_arns
    }
    condition {
      test     = "Bool"
      variable = "elasticfilesystem:AccessedViaMountTarget"
      values   = ["true"]
    }
  }

  statement {
    sid       = "NoRootForOthers"
    effect    = "Deny"
    actions   = ["elasticfilesystem:ClientRootAccess"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "ArnNotEquals"
      variable = "aws:PrincipalArn"
      values   = var.root_access_role_arns
    }
  }
}

resource "aws_efs_file_system_policy" "this" {
  file_system_id = aws_efs_file_system.this.id
  policy         = data.aws_iam_policy_document.efs.json
}

resource "aws_efs_mount_target" "this" {
  for_each        = var.subnet_ids
  file_system_id  = aws_efs_file_system.this.id
  subnet_id       = each.value
  security_groups = [aws_security_group.nfs.id]
}
