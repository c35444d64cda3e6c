# IAM roles for service accounts on a self-managed cluster. The API server signs service-account tokens as the
# issuer https://<bucket>.s3.<region>.amazonaws.com; its discovery document and JWKS are published to this bucket
# by `invoke publish-oidc` (provision/irsa.py) and read anonymously by AWS STS, which trusts the issuer through
# the OIDC provider below. Each researcher's namespace's default ServiceAccount may assume a role that reads the
# datasets bucket and writes the researcher's prefix of the results bucket; the pod identity webhook
# (deploy/storage) injects the token and AWS_ROLE_ARN into their pods. No node-wide S3 credentials are involved.
data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

locals {
  bucket = "${var.cluster}-oidc-${data.aws_caller_identity.current.account_id}"
  issuer = "${local.bucket}.s3.${var.region}.amazonaws.com"
  tags   = merge(var.tags, { "research.cluster/cluster" = var.cluster })
}

resource "aws_s3_bucket" "issuer" {
  #checkov:skip=CKV_AWS_144:two small public documents regenerated from the cluster's key; nothing to replicate
  #checkov:skip=CKV2_AWS_62:no consumer of events on the issuer documents
  #checkov:skip=CKV_AWS_145:STS reads the documents anonymously, which SSE-KMS objects would refuse; SSE-S3 instead
  #checkov:skip=CKV2_AWS_6:the public access block leaves bucket policies open: two documents must be public for STS
  #checkov:skip=CKV_AWS_18:the access-log bucket admits only the data buckets; reads of two public documents need no log
  bucket = local.bucket
  tags   = local.tags
}

resource "aws_s3_bucket_ownership_controls" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "issuer" {
  bucket = aws_s3_bucket.issuer.id
  rule {
    id     = "old-key-sets"
    status = "Enabled"
    filter {}
    noncurrent_version_expiration {
      noncurrent_days = 30
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

resource "aws_s3_bucket_public_access_block" "issuer" {
  #checkov:skip=CKV_AWS_54:the bucket policy makes exactly the two OIDC documents public, which STS must read
  #checkov:skip=CKV_AWS_56:the bucket policy makes exactly the two OIDC documents public, which STS must read
  bucket                  = aws_s3_bucket.issuer.id
  block_public_acls       = true
  ignore_public_acls      = true
  block_public_policy     = false
  restrict_public_buckets = false
}

data "aws_iam_policy_document" "issuer_bucket" {
  statement {
    sid     = "PublicOidcDocuments"
    actions = ["s3:GetObject"]
    resources = [
      "${aws_s3_bucket.issuer.arn}/.well-known/openid-configuration",
      "${aws_s3_bucket.issuer.arn}/keys.json",
    ]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
  }
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.issuer.arn, "${aws_s3_bucket.issuer.arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "issuer" {
  bucket     = aws_s3_bucket.issuer.id
  policy     = data.aws_iam_policy_document.issuer_bucket.json
  depends_on = [aws_s3_bucket_public_access_block.issuer]
}

resource "aws_iam_openid_connect_provider" "cluster" {
  url            = "https://${local.issuer}"
  client_id_list = ["sts.amazonaws.com"]
  tags           = local.tags
}

data "aws_iam_policy_document" "trust" {
  for_each = var.researchers
  statement {
    actions = ["sts:AssumeRoleWithWebIdentity"]
    principals {
      type        = "Federated"
      identifiers = [aws_iam_openid_connect_provider.cluster.arn]
    }
    condition {
      test     = "StringEquals"
      variable = "${local.issuer}:sub"
      values   = ["system:serviceaccount:${each.value}:default"]
    }
    condition {
      test     = "StringEquals"
      variable = "${local.issuer}:aud"
      values   = ["sts.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "s3" {
  for_each = var.researchers
  statement {
    sid       = "ListBoth"
    actions   = ["s3:ListBucket"]
    resources = [var.datasets_bucket_arn, var.results_bucket_arn]
  }
  statement {
    sid       = "ReadDatasets"
    actions   = ["s3:GetObject"]
    resources = ["${var.datasets_bucket_arn}/*"]
  }
  statement {
    sid       = "OwnResults"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = ["${var.results_bucket_arn}/${each.key}/*"]
  }
  statement {
    sid       = "BucketKey"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [var.s3_kms_key_arn]
  }
}

resource "aws_iam_role" "researcher" {
  for_each           = var.researchers
  name               = "${var.cluster}-researcher-${each.key}"
  description        = "S3 for the pods of ${each.value} (IRSA, default ServiceAccount)"
  assume_role_policy = data.aws_iam_policy_document.trust[each.key].json
  tags               = local.tags
}

resource "aws_iam_role_policy" "researcher" {
  for_each = var.researchers
  name     = "s3"
  role     = aws_iam_role.researcher[each.key].id
  policy   = data.aws_iam_policy_document.s3[each.key].json
}
