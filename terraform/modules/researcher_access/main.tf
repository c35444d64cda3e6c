# Researchers' own AWS credentials on their laptops (issue 36), without long-lived keys: IAM Roles Anywhere with
# the lab's VPN CA as the trust anchor. The certificate `invoke add-user` issues for the Client VPN (CN = the
# user's name, RSA 2048) also signs aws_signing_helper's requests for one-hour credentials of the role
# <cluster>-researcher-laptop, whose policy names the user's own prefix through the session tag Roles Anywhere
# sets from the certificate's CN: `lab submit` uploads code to results/<user>/ and reads the datasets; nothing of
# another researcher's. `invoke remove-user` revokes the certificate and imports the revocation list here, so a
# removed researcher gets no more credentials; removing them from cluster.yaml's users drops them from the trust
# condition at the next apply.
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  account = data.aws_caller_identity.this.account_id
  p       = data.aws_partition.this.partition
  me      = "$${aws:PrincipalTag/x509Subject/CN}"
}

resource "aws_rolesanywhere_trust_anchor" "lab" {
  name    = "${var.cluster}-researchers"
  enabled = true

  source {
    source_type = "CERTIFICATE_BUNDLE"
    source_data {
      x509_certificate_data = var.ca_certificate_pem
    }
  }
}

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"]
    principals {
      type        = "Service"
      identifiers = ["rolesanywhere.amazonaws.com"]
    }
    # only certificates of the lab's CA (no confused deputy), and only of a researcher the spec lists
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_rolesanywhere_trust_anchor.lab.arn]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:PrincipalTag/x509Subject/CN"
      values   = var.users
    }
  }
}

resource "aws_iam_role" "laptop" {
  name                 = "${var.cluster}-researcher-laptop"
  description          = "Researchers' laptops (IAM Roles Anywhere, the lab's VPN CA): their own results prefix and the datasets"
  assume_role_policy   = data.aws_iam_policy_document.assume.json
  max_session_duration = 3600
}

data "aws_iam_policy_document" "laptop" {
  statement {
    sid       = "ListOwnPrefix"
    actions   = ["s3:ListBucket"]
    resources = [var.results_bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${local.me}/*", local.me]
    }
  }

  statement {
    sid       = "OwnResultsAndCode"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = ["${var.results_bucket_arn}/${local.me}/*"]
  }

  statement {
    sid       = "ReadDatasets"
    actions   = ["s3:ListBucket", "s3:GetObject"]
    resources = [var.datasets_bucket_arn, "${var.datasets_bucket_arn}/*"]
  }

  statement {
    sid       = "BucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [var.s3_kms_key_arn]
  }

  # `lab image build` pushes to the researchers' repository (tags are content hashes: an existing one cannot be
  # replaced, the repository's tags being immutable)
  statement {
    sid       = "EcrLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # GetAuthorizationToken supports no resource-level permissions
  }

  statement {
    sid = "PushResearchImages"
    actions = [
      "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:InitiateLayerUpload",
      "ecr:UploadLayerPart", "ecr:CompleteLayerUpload", "ecr:PutImage",
    ]
    resources = ["arn:${local.p}:ecr:${var.region}:${local.account}:repository/${var.repository}"]
  }
}

resource "aws_iam_role_policy" "laptop" {
  name   = "${var.cluster}-researcher-laptop"
  role   = aws_iam_role.laptop.id
  policy = data.aws_iam_policy_document.laptop.json
}

resource "aws_rolesanywhere_profile" "laptops" {
  name             = "${var.cluster}-researchers"
  enabled          = true
  role_arns        = [aws_iam_role.laptop.arn]
  duration_seconds = 3600
}
