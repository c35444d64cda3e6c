# The batch autoscaler's role. The same list is documented in docs/terraform.md and by the autoscaler.
# Assumed with the projected token of exactly one ServiceAccount (IAM roles for service accounts, through the
# cluster's OIDC provider, terraform/modules/service_account_issuer): no instance role can assume it, and the pod
# needs neither hostNetwork nor IMDS (hop limit 1 on every instance).
data "aws_iam_policy_document" "autoscaler_assume" {
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = [var.oidc_provider_arn]
    }
    condition {
      test     = "StringEquals"
      variable = "${var.oidc_issuer}:sub"
      values   = [var.autoscaler_subject]
    }
    condition {
      test     = "StringEquals"
      variable = "${var.oidc_issuer}:aud"
      values   = ["sts.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "autoscaler" {
  statement {
    sid = "Describe"
    actions = [
      "autoscaling:DescribeAutoScalingGroups",
      "autoscaling:DescribeAutoScalingInstances",
      "autoscaling:DescribeScalingActivities",
      "autoscaling:DescribeTags",
      "autoscaling:DescribeLaunchConfigurations",
      "ec2:DescribeLaunchTemplateVersions",
      "ec2:DescribeInstanceTypes",
      "ec2:DescribeInstances",
    ]
    resources = ["*"] # Describe actions support no resource-level permissions
  }

  statement {
    sid = "ScaleOwnedGroups"
    # The last two adopt a group made without scale-in protection (docs/autoscaler.md): protect its instances.
    actions = [
      "autoscaling:SetDesiredCapacity",
      "autoscaling:TerminateInstanceInAutoScalingGroup",
      "autoscaling:UpdateAutoScalingGroup",
      "autoscaling:SetInstanceProtection",
    ]
    resources = ["arn:${local.p}:autoscaling:*:${local.account}:autoScalingGroup:*:autoScalingGroupName/${var.cluster}-*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/k8s.io/cluster-autoscaler/${var.cluster}"
      values   = ["owned"]
    }
  }
}

resource "aws_iam_policy" "autoscaler" {
  name        = "${var.cluster}-autoscaler"
  description = "Batch autoscaler of ${var.cluster}: describe groups, scale only groups the cluster owns"
  policy      = data.aws_iam_policy_document.autoscaler.json
}

resource "aws_iam_role" "autoscaler" {
  name               = "${var.cluster}-autoscaler"
  assume_role_policy = data.aws_iam_policy_document.autoscaler_assume.json
}

resource "aws_iam_role_policy_attachment" "autoscaler" {
  role       = aws_iam_role.autoscaler.name
  policy_arn = aws_iam_policy.autoscaler.arn
}
