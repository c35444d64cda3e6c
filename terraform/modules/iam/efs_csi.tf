# The EFS CSI driver's node plugin (deploy/storage/efs-csi-node.yaml.j2) mounts researchers' volumes with IAM
# authorization (mount option `iam`: efs-utils signs the mount with the credentials of AWS_ROLE_ARN and the
# projected token, AssumeRoleWithWebIdentity), as this role and nothing else: IRSA with the token of exactly its
# ServiceAccount, kube-system/efs-csi-node. The file-system policy (../efs) lets this role, and no other
# principal, mount the jobs' access points; no role mounts the bare file system or has root on it. The role may
# mount only through an access point (elasticfilesystem:AccessPointArn present: Amazon EFS User Guide, "Using
# access points in IAM policies").
data "aws_iam_policy_document" "efs_csi_assume" {
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = [var.oidc_provider_arn]
    }
    condition {
      test     = "StringEquals"
      variable = "${var.oidc_issuer}:sub"
      values   = [var.efs_csi_subject]
    }
    condition {
      test     = "StringEquals"
      variable = "${var.oidc_issuer}:aud"
      values   = ["sts.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "efs_csi" {
  statement {
    sid       = "MountThroughAccessPoints"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = ["arn:${local.p}:elasticfilesystem:*:${local.account}:file-system/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/research.cluster/cluster"
      values   = [var.cluster]
    }
    condition {
      test     = "Null"
      variable = "elasticfilesystem:AccessPointArn"
      values   = ["false"]
    }
  }
}

resource "aws_iam_role" "efs_csi" {
  name               = "${var.cluster}-efs-csi-node"
  description        = "EFS CSI node plugin of ${var.cluster}: IAM mounts through access points only (IRSA)"
  assume_role_policy = data.aws_iam_policy_document.efs_csi_assume.json
}

resource "aws_iam_role_policy" "efs_csi" {
  name   = "efs-mount"
  role   = aws_iam_role.efs_csi.id
  policy = data.aws_iam_policy_document.efs_csi.json
}
