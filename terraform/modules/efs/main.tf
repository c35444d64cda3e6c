# EFS for home directories and datasets: encrypted, backed up, a mount target in every private subnet (in the VPC
# the file system's DNS name resolves to the mount target in the client's own zone: Amazon EFS User Guide,
# "Mounting on Amazon EC2 with a DNS name"; the VPC has DNS support and hostnames on), NFS only from the node networks, TLS
# only, root only for the cluster's roles, and every other client only through an access point.
locals {
  name = "${var.cluster}-${var.region}"
}

resource "aws_efs_file_system" "this" {
  #checkov:skip=CKV2_AWS_18:automatic backups in every region (aws_efs_backup_policy below); the primary's file system is also in ../backup's plan, copied to a second region
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

# The file-system policy (Amazon EFS User Guide, "Using IAM to control file system data access", "Using access
# points in IAM policies"): without one, any client that reaches a mount target has root. With it, every access
# point is usable only by the identity it belongs to, and nobody has root:
# - every request without TLS is denied (aws:SecureTransport; mount with -o tls);
# - only job_role_arns (the EFS CSI node plugin's IRSA role) and shell_role_arns (the SSH machines' role) mount
#   at all, with IAM (mount -o tls,iam); every other principal is refused by an explicit Deny, anonymous (non-IAM)
#   mounts too: a negated condition operator holds when aws:PrincipalArn is absent;
# - the job role only through the jobs' access points (each researcher's home and results, enforcing their uid;
#   Kubernetes binds each researcher's volumes to their own namespace's claims: provision/storage.py) and
#   /datasets; the shell role only through the SSH machines' access points and /datasets; neither the bare file
#   system (a negated operator holds when elasticfilesystem:AccessPointArn is absent);
# - no ClientRootAccess for anyone: the access points create their directories themselves (creation_info).
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  job_ap_arns   = concat([for ap in aws_efs_access_point.job : ap.arn], [aws_efs_access_point.datasets.arn])
  shell_ap_arns = concat([for ap in aws_efs_access_point.shell : ap.arn], [aws_efs_access_point.datasets.arn])
  mount_roles   = concat(var.job_role_arns, var.shell_role_arns)
  # without SSH machines the statement about their role names the role they would have (never a principal then)
  shell_roles = length(var.shell_role_arns) > 0 ? var.shell_role_arns : ["arn:${data.aws_partition.this.partition}:iam::${data.aws_caller_identity.this.account_id}:role/${var.cluster}-ssh-machines"]
}

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
    sid       = "MountRolesThroughAccessPoints"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = local.mount_roles
    }
    condition {
      test     = "Bool"
      variable = "elasticfilesystem:AccessedViaMountTarget"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "elasticfilesystem:AccessPointArn"
      values   = ["false"]
    }
  }

  # An explicit Deny wins over any Allow of an identity policy elsewhere in the account.
  statement {
    sid       = "NoOtherPrincipal"
    effect    = "Deny"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "ArnNotEquals"
      variable = "aws:PrincipalArn"
      values   = local.mount_roles
    }
  }

  statement {
    sid       = "JobRolesOnlyThroughTheJobsAccessPoints"
    effect    = "Deny"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:PrincipalArn"
      values   = var.job_role_arns
    }
    condition {
      test     = "ArnNotEquals" # the key's type is ARN (Service Authorization Reference, Amazon EFS condition keys)
      variable = "elasticfilesystem:AccessPointArn"
      values   = local.job_ap_arns
    }
  }

  statement {
    sid       = "ShellRolesOnlyThroughTheShellsAccessPoints"
    effect    = "Deny"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:PrincipalArn"
      values   = local.shell_roles
    }
    condition {
      test     = "ArnNotEquals"
      variable = "elasticfilesystem:AccessPointArn"
      values   = local.shell_ap_arns
    }
  }

  statement {
    sid       = "NoRootForAnyone"
    effect    = "Deny"
    actions   = ["elasticfilesystem:ClientRootAccess"]
    resources = [aws_efs_file_system.this.arn]
    principals {
      type        = "AWS"
      identifiers = ["*"]
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

# Access points (Amazon EFS User Guide, "Working with access points"): each fixes the directory a client sees as
# its root; when that directory does not exist, EFS creates it on the first mount with creation_info's owner
# and permissions, which a root-squashed client could not do itself.
# - job: a researcher's home and results for their pods (EFS CSI driver, volumeHandle <fs>::<fsap>). posix_user
#   makes every request through it the researcher's uid and gid, whatever user the container runs as.
# - shell: the same directories for the SSH machines, without posix_user: several researchers share a machine,
#   and an enforced identity would let each of them act as the mount's owner (NFS checks access with the
#   identity the access point enforces); there each request keeps its own uid, and the modes decide.
# - datasets: the shared /datasets, sticky and world-writable like /tmp (anyone adds a dataset, only its owner
#   removes it); jobs mount it read-only.
locals {
  user_dirs = merge([
    for u in var.users : {
      for d in ["home", "results"] : "${u.name}/${d}" => { uid = u.uid, path = "/${d}/${u.name}" }
    }
  ]...)
}

resource "aws_efs_access_point" "job" {
  for_each       = local.user_dirs
  file_system_id = aws_efs_file_system.this.id

  posix_user {
    uid = each.value.uid
    gid = each.value.uid
  }

  root_directory {
    path = each.value.path
    creation_info {
      owner_uid   = each.value.uid
      owner_gid   = each.value.uid
      permissions = "0750"
    }
  }

  tags = { Name = "${local.name}-job-${replace(each.key, "/", "-")}" }
}

resource "aws_efs_access_point" "shell" {
  #checkov:skip=CKV_AWS_330:shared machines: an enforced identity would let every user of the machine act as the owner (see above)
  for_each       = var.shell_access_points ? local.user_dirs : {}
  file_system_id = aws_efs_file_system.this.id

  root_directory {
    path = each.value.path
    creation_info {
      owner_uid   = each.value.uid
      owner_gid   = each.value.uid
      permissions = "0750"
    }
  }

  tags = { Name = "${local.name}-shell-${replace(each.key, "/", "-")}" }
}

resource "aws_efs_access_point" "datasets" {
  #checkov:skip=CKV_AWS_330:shared by all researchers, each adding datasets as themselves (sticky 1777)
  file_system_id = aws_efs_file_system.this.id

  root_directory {
    path = "/datasets"
    creation_info {
      owner_uid   = 0
      owner_gid   = 0
      permissions = "1777"
    }
  }

  tags = { Name = "${local.name}-datasets" }
}
