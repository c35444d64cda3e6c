# Packer's amazon-ebs builder (the permissions Packer documents, without the Windows password and AMI/snapshot
# sharing actions, which this Linux image never uses) plus publishing the AMI id to SSM, which picks the image
# every node boots. So (issue 26):
# - only the operator role (<cluster>-operator, itself assumed by the account's operators) or the named CI
#   principals, with the ExternalId agreed with the CI system, or with MFA, may assume it;
# - every EC2 write is limited to the bake region (copies: the cluster's regions), and what it creates or
#   changes to the build's tags: the instance and its volumes are launched only with Packer's run_tags
#   (Cluster=<cluster>, research.cluster/role=gpu-worker: aws:RequestTag), only from Canonical's images, and
#   stopped, modified or terminated only when tagged so (ec2:ResourceTag);
# - it tags only what it creates (issue 36): instances and volumes in RunInstances, the temporary key pair and
#   security group in their create calls (ec2:CreateAction); images and snapshots only with the build's own tags
#   (Packer 1.6.6 tags them after CreateImage and CopyImage, so no ec2:CreateAction is present);
# - it deregisters and deletes nothing: CreateTags reaches any image of the cluster's regions, so a tag proves
#   nothing about who made an image; an image Packer leaves behind after a failed build is an operator's to
#   deregister (docs/operations.md).
# Packer 1.6.6 cannot tag its temporary key pair and security group, so the key pair is limited to the bake region
# and the security group to the bake region's default VPC, where Packer builds (ec2:Vpc): no group of the
# cluster's VPCs can be opened. Packer's group opens SSH only to the bake host's address
# (packer/gpu-worker.pkr.hcl, temporary_security_group_source_cidrs).
data "aws_iam_policy_document" "image_builder_assume" {
  statement {
    sid     = "TheOperatorRole"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.p}:iam::${local.account}:role/${var.cluster}-operator"] # aws_iam_role.operator
    }
  }

  dynamic "statement" {
    for_each = length(var.image_builder_ci_principal_arns) > 0 ? [1] : []
    content {
      sid     = "CiWithTheExternalId"
      actions = ["sts:AssumeRole"]
      principals {
        type        = "AWS"
        identifiers = var.image_builder_ci_principal_arns
      }
      condition {
        test     = "StringEquals"
        variable = "sts:ExternalId"
        values   = [var.image_builder_external_id]
      }
    }
  }

  dynamic "statement" {
    for_each = length(var.image_builder_mfa_principal_arns) > 0 ? [1] : []
    content {
      sid     = "PeopleWithMfa"
      actions = ["sts:AssumeRole"]
      principals {
        type        = "AWS"
        identifiers = var.image_builder_mfa_principal_arns
      }
      condition {
        test     = "Bool"
        variable = "aws:MultiFactorAuthPresent"
        values   = ["true"]
      }
    }
  }
}

# The bake region's default VPC, where Packer launches (invoke preflight checks that it exists).
data "aws_vpc" "bake" {
  default = true
}

locals {
  bake      = var.bake_region
  canonical = "099720109477" # Canonical's account: the Ubuntu images (packer/gpu-worker.pkr.hcl source_ami_filter)
}

data "aws_iam_policy_document" "image_builder" {
  #checkov:skip=CKV_AWS_111:Describe* and the temporary key pair and security group (untaggable by Packer 1.6.6) are limited by region; every other write is tag-scoped.
  #checkov:skip=CKV_AWS_356:Describe actions support no resource-level permissions; the rest name their resource types in the bake region.
  statement {
    sid = "Describe"
    actions = [
      "ec2:DescribeImageAttribute", "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus",
      "ec2:DescribeRegions", "ec2:DescribeSecurityGroups", "ec2:DescribeSnapshots", "ec2:DescribeSubnets",
      "ec2:DescribeTags", "ec2:DescribeVolumes",
    ]
    resources = ["*"] # Describe actions support no resource-level permissions
  }

  # RunInstances authorizes every resource of the launch (EC2 User Guide, "Launch instances (RunInstances)"):
  # the instance and its volumes must carry the build's tags at launch; the image must be Canonical's; the
  # subnet, network interface, key pair and security group are the bake region's.
  statement {
    sid       = "LaunchTheBuildInstanceTagged"
    actions   = ["ec2:RunInstances"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:instance/*", "arn:${local.p}:ec2:${local.bake}:${local.account}:volume/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/Cluster"
      values   = [var.cluster]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/research.cluster/role"
      values   = ["gpu-worker"]
    }
  }

  statement {
    sid       = "LaunchFromCanonicalImages"
    actions   = ["ec2:RunInstances"]
    resources = ["arn:${local.p}:ec2:${local.bake}::image/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:Owner"
      values   = [local.canonical]
    }
  }

  statement {
    sid     = "LaunchInTheBakeRegion"
    actions = ["ec2:RunInstances"]
    resources = [
      "arn:${local.p}:ec2:${local.bake}:${local.account}:subnet/*",
      "arn:${local.p}:ec2:${local.bake}:${local.account}:network-interface/*",
      "arn:${local.p}:ec2:${local.bake}:${local.account}:security-group/*",
      "arn:${local.p}:ec2:${local.bake}:${local.account}:key-pair/*",
    ]
  }

  statement {
    sid       = "TemporaryKeyPair"
    actions   = ["ec2:CreateKeyPair", "ec2:DeleteKeyPair"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:key-pair/*"]
  }

  statement {
    sid       = "TemporarySecurityGroupInTheDefaultVpc"
    actions   = ["ec2:CreateSecurityGroup"]
    resources = [data.aws_vpc.bake.arn, "arn:${local.p}:ec2:${local.bake}:${local.account}:security-group/*"]
  }

  statement {
    sid       = "OnlyGroupsOfTheDefaultVpc"
    actions   = ["ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteSecurityGroup"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:security-group/*"]
    condition {
      test     = "ArnEquals"
      variable = "ec2:Vpc"
      values   = [data.aws_vpc.bake.arn]
    }
  }

  # The build instance carries Packer's run_tags from RunInstances on; the builder may stop, modify and
  # terminate only instances tagged so, and may tag an instance only while launching it, so it cannot tag a
  # cluster node into its reach.
  statement {
    sid       = "StopAndTerminateOnlyBuildInstances"
    actions   = ["ec2:StopInstances", "ec2:TerminateInstances", "ec2:ModifyInstanceAttribute"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:instance/*"]
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
    sid       = "VolumesOfBuildInstances"
    actions   = ["ec2:AttachVolume", "ec2:DetachVolume", "ec2:DeleteVolume", "ec2:CreateVolume"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:volume/*", "arn:${local.p}:ec2:${local.bake}:${local.account}:instance/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/Cluster"
      values   = [var.cluster]
    }
  }

  statement {
    sid       = "TagInstancesOnlyAtLaunch"
    actions   = ["ec2:CreateTags"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:instance/*", "arn:${local.p}:ec2:${local.bake}:${local.account}:volume/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["RunInstances"]
    }
  }

  # The image: created from the tagged build instance, copied into the cluster's regions, tagged there.
  statement {
    sid       = "ImageOfTheBuildInstance"
    actions   = ["ec2:CreateImage"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:instance/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:ResourceTag/Cluster"
      values   = [var.cluster]
    }
  }

  statement {
    sid       = "ImagesAndSnapshotsInTheClustersRegions"
    actions   = ["ec2:CreateImage", "ec2:CopyImage", "ec2:RegisterImage", "ec2:CreateSnapshot"]
    resources = concat([for r in var.regions : "arn:${local.p}:ec2:${r}::image/*"], [for r in var.regions : "arn:${local.p}:ec2:${r}::snapshot/*"])
  }

  statement {
    sid       = "TagImagesAndSnapshotsWithTheBuildsTags"
    actions   = ["ec2:CreateTags"]
    resources = concat([for r in var.regions : "arn:${local.p}:ec2:${r}::image/*"], [for r in var.regions : "arn:${local.p}:ec2:${r}::snapshot/*"])
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/Cluster"
      values   = [var.cluster]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/research.cluster/role"
      values   = ["gpu-worker"]
    }
  }

  statement {
    sid       = "TagTheTemporaryKeyPairAndSecurityGroupAtCreation"
    actions   = ["ec2:CreateTags"]
    resources = ["arn:${local.p}:ec2:${local.bake}:${local.account}:security-group/*", "arn:${local.p}:ec2:${local.bake}:${local.account}:key-pair/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["CreateSecurityGroup", "CreateKeyPair"]
    }
  }

  # The build instance's profile (image_bake.tf): passed to EC2 only, and read by Packer before the launch.
  statement {
    sid       = "PassTheBakeRoleToEc2"
    actions   = ["iam:PassRole"]
    resources = ["arn:${local.p}:iam::${local.account}:role/${var.cluster}-image-bake"] # aws_iam_role.image_bake
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ec2.amazonaws.com"]
    }
  }

  statement {
    sid       = "ReadTheBakeProfile"
    actions   = ["iam:GetInstanceProfile"]
    resources = ["arn:${local.p}:iam::${local.account}:instance-profile/${var.cluster}-image-bake"]
  }

  statement {
    sid       = "PublishAmiId"
    actions   = ["ssm:PutParameter", "ssm:GetParameter"]
    resources = [for r in var.regions : "arn:${local.p}:ssm:${r}:${local.account}:parameter/${var.cluster}/ami/gpu-worker"]
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
  depends_on         = [aws_iam_role.operator] # IAM refuses a trust policy naming a role that does not exist yet

  lifecycle {
    precondition {
      condition     = length(var.image_builder_ci_principal_arns) == 0 || length(var.image_builder_external_id) >= 12
      error_message = "image_builder_ci_principal_arns needs image_builder_external_id (at least 12 characters): CI assumes the image builder only with it."
    }
  }
}

resource "aws_iam_role_policy_attachment" "image_builder" {
  role       = aws_iam_role.image_builder.name
  policy_arn = aws_iam_policy.image_builder.arn
}
