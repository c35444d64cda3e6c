# Packer's amazon-ebs builder (the permissions Packer documents, without the Windows password and AMI/snapshot
# sharing actions, which this Linux image never uses) plus publishing the AMI id to SSM. Operators or CI assume
# the role from this account. Stopping, modifying and terminating instances is limited to the build instance
# by its tags.
data "aws_iam_policy_document" "image_builder_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.p}:iam::${local.account}:root"]
    }
  }
}

data "aws_iam_policy_document" "image_builder" {
  #checkov:skip=CKV_AWS_111:Packer creates and deletes a temporary instance, key pair, security group, volumes and snapshots whose ids do not exist before the build.
  #checkov:skip=CKV_AWS_356:Same: the builder's EC2 resources are created during the build, so no ARN can name them in advance.
  statement {
    sid = "PackerAmazonEbs"
    actions = [
      "ec2:AttachVolume", "ec2:AuthorizeSecurityGroupIngress", "ec2:CopyImage", "ec2:CreateImage",
      "ec2:CreateKeyPair", "ec2:CreateSecurityGroup", "ec2:CreateSnapshot",
      "ec2:CreateVolume", "ec2:DeleteKeyPair", "ec2:DeleteSecurityGroup", "ec2:DeleteSnapshot",
      "ec2:DeleteVolume", "ec2:DeregisterImage", "ec2:DescribeImageAttribute", "ec2:DescribeImages",
      "ec2:DescribeInstances", "ec2:DescribeInstanceStatus", "ec2:DescribeRegions",
      "ec2:DescribeSecurityGroups", "ec2:DescribeSnapshots", "ec2:DescribeSubnets", "ec2:DescribeTags",
      "ec2:DescribeVolumes", "ec2:DetachVolume", "ec2:RegisterImage", "ec2:RunInstances",
    ]
    resources = ["*"]
  }

  # The build instance carries Packer's run_tags (packer/gpu-worker.pkr.hcl: Cluster and research.cluster/role)
  # from RunInstances on; the builder may stop, modify and terminate only instances tagged so, and may tag an
  # instance only while launching it, so it cannot tag a cluster node into its reach.
  statement {
    sid       = "StopAndTerminateOnlyBuildInstances"
    actions   = ["ec2:StopInstances", "ec2:TerminateInstances", "ec2:ModifyInstanceAttribute"]
    resources = ["arn:${local.p}:ec2:*:${local.account}:instance/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:ResourceTag/Cluster"
      values   = [var.cluster]
    }
    condition {
      test     = "StringEquals"
      variable = "ec2:ResourceTag/research.cluster/role"
      values   = ["gpu-worker"]
    }
  }

  statement {
    sid       = "TagInstancesOnlyAtLaunch"
    actions   = ["ec2:CreateTags"]
    resources = ["arn:${local.p}:ec2:*:${local.account}:instance/*", "arn:${local.p}:ec2:*:${local.account}:volume/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["RunInstances"]
    }
  }

  statement {
    sid     = "TagImagesAndBuildLeftovers"
    actions = ["ec2:CreateTags"]
    resources = [
      "arn:${local.p}:ec2:*::image/*",
      "arn:${local.p}:ec2:*::snapshot/*",
      "arn:${local.p}:ec2:*:${local.account}:security-group/*",
      "arn:${local.p}:ec2:*:${local.account}:key-pair/*",
    ]
  }

  statement {
    sid       = "PublishAmiId"
    actions   = ["ssm:PutParameter", "ssm:GetParameter"]
    resources = ["${local.ssm}/ami/gpu-worker"]
  }
}

resource "aws_iam_policy" "image_builder" {
  name        = "${var.cluster}-image-builder"
  description = "Packer builds of the ${var.cluster} GPU image"
  policy      = data.aws_iam_policy_document.image_builder.json
}

resource "aws_iam_role" "image_builder" {
  name               = "${var.cluster}-image-builder"
  assume_role_policy = data.aws_iam_policy_document.image_builder_assume.json
}

resource "aws_iam_role_policy_attachment" "image_builder" {
  role       = aws_iam_role.image_builder.name
  policy_arn = aws_iam_policy.image_builder.arn
}
