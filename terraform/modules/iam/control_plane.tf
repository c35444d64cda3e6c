# The control plane's role. It alone writes the kubeadm join parameters (nodes and the site only read the token
# and the CA hash; the certificate key is read by control-plane members only) and its members' bootstrap status.
# IMDS hop limit 1 on the members keeps pods from using it (modules/control_plane).
data "aws_iam_policy_document" "control_plane" {
  statement {
    sid     = "PublishJoinParameters"
    actions = ["ssm:GetParameter", "ssm:PutParameter"]
    resources = [
      "${local.kubeadm}/join-token",
      "${local.kubeadm}/ca-cert-hash",
    ]
  }

  # The certificate key exists only while a member joins (scripts/bootstrap.sh serve_joins): a joining member
  # asks through join-request, a joined one publishes the key, both delete it after (issue 26).
  statement {
    sid     = "CertificatesOnlyWhileAMemberJoins"
    actions = ["ssm:GetParameter", "ssm:PutParameter", "ssm:DeleteParameter"]
    resources = [
      "${local.kubeadm}/certificate-key",
      "${local.ssm}/control-plane/join-request",
    ]
  }

  # etcd's encryption key (scripts/bootstrap.sh setup_encryption): made by member 0 at init, read by joiners
  statement {
    sid       = "EtcdEncryptionKey"
    actions   = ["ssm:GetParameter", "ssm:PutParameter"]
    resources = ["${local.kubeadm}/encryption-key"]
  }

  statement {
    sid     = "ReportBootstrapState"
    actions = ["ssm:GetParameter", "ssm:PutParameter"]
    resources = [
      "${local.ssm}/control-plane/init",
      "${local.ssm}/control-plane/status/member-*",
    ]
  }

  statement {
    sid     = "PublishOperatorAccess"
    actions = ["ssm:PutParameter"]
    # the admin kubeconfig (SecureString, read only by <cluster>-operator) and sa.pub (modules/iam/operator.tf)
    resources = [
      "${local.ssm}/control-plane/admin-kubeconfig",
      "${local.ssm}/control-plane/sa-pub",
    ]
  }

  # a joined member registers its own address and deregisters those of replaced members (bootstrap.sh)
  statement {
    sid       = "ServeThroughTheBalancer"
    actions   = ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"]
    resources = ["arn:${local.p}:elasticloadbalancing:*:${local.account}:targetgroup/${var.cluster}-api/*"]
  }

  statement {
    sid       = "ReadTheBalancersTargets"
    actions   = ["elasticloadbalancing:DescribeTargetHealth"]
    resources = ["*"] # DescribeTargetHealth supports no resource-level permissions
  }

  # approve-csrs (scripts/bootstrap.sh node_key_roles): the ids of the roles whose instances publish kubelet keys
  # (node-keys/<role id>:<instance id>, modules/etcd_backup)
  statement {
    sid     = "ReadJoiningRolesIds"
    actions = ["iam:GetRole"]
    resources = [
      "arn:${local.p}:iam::${local.account}:role/${var.cluster}-node",
      "arn:${local.p}:iam::${local.account}:role/${var.cluster}-control-plane",
    ]
  }

  statement {
    sid       = "ListLiveMembers"
    actions   = ["ec2:DescribeInstances"]
    resources = ["*"] # DescribeInstances supports no resource-level permissions
  }

  statement {
    sid       = "EncryptClusterSecureStrings"
    actions   = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"]
    resources = [local.cluster_keys]
    condition {
      test     = "StringLike"
      variable = "kms:ViaService"
      values   = ["ssm.*.amazonaws.com"]
    }
    condition {
      test     = "ForAnyValue:StringEquals"
      variable = "kms:ResourceAliases"
      values   = ["alias/${var.cluster}"]
    }
  }
}

resource "aws_iam_policy" "control_plane" {
  name        = "${var.cluster}-control-plane"
  description = "Control plane of ${var.cluster}: kubeadm join parameters, bootstrap status"
  policy      = data.aws_iam_policy_document.control_plane.json
}

resource "aws_iam_role" "control_plane" {
  name               = "${var.cluster}-control-plane"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy_attachment" "control_plane" {
  for_each = {
    control-plane = aws_iam_policy.control_plane.arn
    node          = aws_iam_policy.node.arn
  }
  role       = aws_iam_role.control_plane.name
  policy_arn = each.value
}

resource "aws_iam_instance_profile" "control_plane" {
  name = "${var.cluster}-control-plane"
  role = aws_iam_role.control_plane.name
}
