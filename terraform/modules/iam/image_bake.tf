# The AWS build instance's own role (issue 36, "pre-pull that works on AWS"): packer/scripts/prepull-images.sh
# pulls the lab's standard image from its ECR repository at bake time with these credentials, and nothing else.
# Packer launches the build instance with this profile (packer/gpu-worker.pkr.hcl, var.bake_instance_profile:
# provision/packer/variables.py names it); the image builder may pass this one role to EC2 only.
data "aws_iam_policy_document" "image_bake" {
  statement {
    sid       = "PullTheStandardImage"
    actions   = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    resources = ["arn:${local.p}:ecr:*:${local.account}:repository/${var.cluster}/standard"]
  }

  statement {
    sid       = "EcrLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # GetAuthorizationToken supports no resource-level permissions
  }
}

resource "aws_iam_role" "image_bake" {
  name               = "${var.cluster}-image-bake"
  description        = "The ${var.cluster} GPU image's build instance: pulls the standard image for the pre-pull"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy" "image_bake" {
  name   = "${var.cluster}-image-bake"
  role   = aws_iam_role.image_bake.id
  policy = data.aws_iam_policy_document.image_bake.json
}

resource "aws_iam_instance_profile" "image_bake" {
  name = "${var.cluster}-image-bake"
  role = aws_iam_role.image_bake.name
}
