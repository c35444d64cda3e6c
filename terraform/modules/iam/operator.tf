# Operator access without an SSH key or an open port: every instance's role may register with Session Manager
# (the SSM Agent of the Ubuntu image; the minimum AWS documents for it: Session Manager User Guide, "Step 2:
# Verify or add instance permissions for Session Manager", custom policy without S3/KMS logging), and the role
# <cluster>-operator alone may read what control-plane member 0 publishes for operators: the admin kubeconfig
# (SecureString, cluster key) and sa.pub (the service-account public key `invoke publish-oidc` publishes). It
# may also start sessions on the cluster's instances (shell, or a port forward to the API).
data "aws_iam_policy_document" "session_manager" {
  #checkov:skip=CKV_AWS_111:ssm:UpdateInstanceInformation and the ssmmessages channel actions support no resource-level permissions (Service Authorization Reference).
  #checkov:skip=CKV_AWS_356:Same: these actions take only "*" as the resource.
  statement {
    sid = "SessionManagerAgent"
    actions = [
      "ssm:UpdateInstanceInformation",
      "ssmmessages:CreateControlChannel",
      "ssmmessages:CreateDataChannel",
      "ssmmessages:OpenControlChannel",
      "ssmmessages:OpenDataChannel",
    ]
    resources = ["*"] # these actions support no resource-level permissions
  }
}

resource "aws_iam_policy" "session_manager" {
  name        = "${var.cluster}-session-manager"
  description = "Session Manager agent on the instances of ${var.cluster} (operators get in without SSH)"
  policy      = data.aws_iam_policy_document.session_manager.json
}

data "aws_iam_policy_document" "operator_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.p}:iam::${local.account}:root"] # delegated to the account's IAM policies
    }
  }
}

data "aws_iam_policy_document" "operator" {
  statement {
    sid     = "ReadOperatorParameters"
    actions = ["ssm:GetParameter"]
    resources = [
      "${local.ssm}/control-plane/admin-kubeconfig",
      "${local.ssm}/control-plane/sa-pub",
      "${local.ssm}/control-plane/init",
      "${local.ssm}/control-plane/status/member-*",
    ]
  }

  statement {
    sid       = "ListBootstrapStatus"
    actions   = ["ssm:GetParametersByPath"]
    resources = ["${local.ssm}/control-plane/status"]
  }

  statement {
    sid       = "DecryptTheKubeconfig"
    actions   = ["kms:Decrypt"]
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

  statement {
    sid     = "SessionsOnClusterInstances"
    actions = ["ssm:StartSession"]
    resources = [
      "arn:${local.p}:ec2:*:${local.account}:instance/*",
      "arn:${local.p}:ssm:*::document/AWS-StartPortForwardingSessionToRemoteHost",
      "arn:${local.p}:ssm:*::document/SSM-SessionManagerRunShell",
    ]
  }

  statement {
    sid       = "OwnSessions"
    actions   = ["ssm:TerminateSession", "ssm:ResumeSession"]
    resources = ["arn:${local.p}:ssm:*:${local.account}:session/$${aws:userid}-*"]
  }
}

resource "aws_iam_policy" "operator" {
  name        = "${var.cluster}-operator"
  description = "Operators of ${var.cluster}: the admin kubeconfig and sa.pub from SSM, Session Manager sessions"
  policy      = data.aws_iam_policy_document.operator.json
}

resource "aws_iam_role" "operator" {
  name               = "${var.cluster}-operator"
  assume_role_policy = data.aws_iam_policy_document.operator_assume.json
}

resource "aws_iam_role_policy_attachment" "operator" {
  role       = aws_iam_role.operator.name
  policy_arn = aws_iam_policy.operator.arn
}

resource "aws_iam_role_policy_attachment" "session_manager" {
  for_each   = { node = aws_iam_role.node.name, control-plane = aws_iam_role.control_plane.name }
  role       = each.value
  policy_arn = aws_iam_policy.session_manager.arn
}
