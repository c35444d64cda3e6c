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

  # Desired capacity within the group's own bounds: AWS refuses a SetDesiredCapacity outside MinSize..MaxSize,
  # which Terraform sets from the spec and the autoscaler cannot change (below).
  statement {
    sid = "ScaleOwnedGroups"
    # SetInstanceProtection adopts a group made without scale-in protection (docs/autoscaler.md).
    actions = [
      "autoscaling:SetDesiredCapacity",
      "autoscaling:TerminateInstanceInAutoScalingGroup",
      "autoscaling:SetInstanceProtection",
    ]
    resources = ["arn:${local.p}:autoscaling:*:${local.account}:autoScalingGroup:*:autoScalingGroupName/${var.cluster}-*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/k8s.io/cluster-autoscaler/${var.cluster}"
      values   = ["owned"]
    }
  }

  # UpdateAutoScalingGroup only to turn on NewInstancesProtectedFromScaleIn when adopting a group: a request that
  # names a minimum or maximum size, a launch template or configuration, or subnets is refused (the condition
  # keys are present exactly when the request sets them: Service Authorization Reference, Amazon EC2 Auto Scaling),
  # so the role cannot raise a group's maximum past the spec's or point it at another image (issue 26).
  statement {
    sid       = "AdoptOwnedGroupsOnly"
    actions   = ["autoscaling:UpdateAutoScalingGroup"]
    resources = ["arn:${local.p}:autoscaling:*:${local.account}:autoScalingGroup:*:autoScalingGroupName/${var.cluster}-*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/k8s.io/cluster-autoscaler/${var.cluster}"
      values   = ["owned"]
    }
    condition {
      test     = "Null"
      variable = "autoscaling:MaxSize"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "autoscaling:MinSize"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "autoscaling:LaunchTemplateVersionSpecified"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "autoscaling:LaunchConfigurationName"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "autoscaling:VPCZoneIdentifiers"
      values   = ["true"]
    }
    condition {
      test     = "Null"
      variable = "autoscaling:InstanceTypes"
      values   = ["true"]
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
