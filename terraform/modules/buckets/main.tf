# S3 buckets for datasets and results: versioned, KMS-encrypted, public access blocked, TLS only, noncurrent
# versions expire, access logs to a log bucket.
data "aws_caller_identity" "this" {}

locals {
  # Bucket names are global: the account id keeps them unique.
  data_buckets = { for p in var.purposes : p => "${var.cluster}-${p}-${data.aws_caller_identity.this.account_id}" }
  all          = merge(local.data_buckets, { access-logs = "${var.cluster}-access-logs-${data.aws_caller_identity.this.account_id}" })
}

data "aws_partition" "this" {}

data "aws_iam_policy_document" "key" {
  #checkov:skip=CKV_AWS_109:A key policy's "*" resource means this key; the account statement delegates to IAM.
  #checkov:skip=CKV_AWS_111:A key policy's "*" resource means this key; the account statement delegates to IAM.
  #checkov:skip=CKV_AWS_356:A key policy's "*" resource means this key itself, not every resource.
  statement {
    sid       = "AccountAdministersThroughIam"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.this.partition}:iam::${data.aws_caller_identity.this.account_id}:root"]
    }
  }
}

resource "aws_kms_key" "s3" {
  description             = "${var.cluster}: S3 buckets"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key.json
}

resource "aws_kms_alias" "s3" {
  name          = "alias/${var.cluster}-s3"
  target_key_id = aws_kms_key.s3.key_id
}

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_144:Datasets are re-creatable and results are versioned; cross-region replication would double the storage bill.
  #checkov:skip=CKV2_AWS_62:No consumer of bucket events; jobs read and write directly.
  for_each = local.all
  bucket   = each.value
  tags     = { Name = each.value, "research.cluster/purpose" = each.key }
}

resource "aws_s3_bucket_logging" "this" {
  for_each      = local.data_buckets
  bucket        = aws_s3_bucket.this[each.key].id
  target_bucket = aws_s3_bucket.this["access-logs"].id
  target_prefix = "${each.key}/"

  # S3 checks the target's grant to the logging service at PutBucketLogging (InvalidTargetBucketForLogging
  # without it): the log bucket's policy first (found by `make day-one`, issue 34)
  depends_on = [aws_s3_bucket_policy.this]
}

resource "aws_s3_bucket_ownership_controls" "this" {
  for_each = local.all
  bucket   = aws_s3_bucket.this[each.key].id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "this" {
  for_each = local.all
  bucket   = aws_s3_bucket.this[each.key].id

  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  for_each = local.all
  bucket   = aws_s3_bucket.this[each.key].id

  rule {
    # S3 server access logging delivers only to targets whose default encryption is SSE-S3 (the log-delivery
    # service has no grant on a customer key), so the access-log bucket uses AES256.
    apply_server_side_encryption_by_default {
      sse_algorithm     = each.key == "access-logs" ? "AES256" : "aws:kms"
      kms_master_key_id = each.key == "access-logs" ? null : aws_kms_key.s3.arn
    }
    bucket_key_enabled = each.key != "access-logs"
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  for_each                = local.all
  bucket                  = aws_s3_bucket.this[each.key].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  for_each = local.all
  bucket   = aws_s3_bucket.this[each.key].id

  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"

    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

data "aws_iam_policy_document" "tls_only" {
  for_each = local.all

  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.this[each.key].arn, "${aws_s3_bucket.this[each.key].arn}/*"]
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

  # Object ownership is BucketOwnerEnforced (no ACLs), so S3 server access logs reach the log bucket only
  # through a bucket policy grant to the logging service principal, limited to this account's data buckets.
  dynamic "statement" {
    for_each = each.key == "access-logs" ? [1] : []
    content {
      sid       = "S3ServerAccessLogsDelivery"
      actions   = ["s3:PutObject"]
      resources = ["${aws_s3_bucket.this[each.key].arn}/*"]
      principals {
        type        = "Service"
        identifiers = ["logging.s3.amazonaws.com"]
      }
      condition {
        test     = "ArnLike"
        variable = "aws:SourceArn"
        values   = [for purpose in keys(local.data_buckets) : aws_s3_bucket.this[purpose].arn]
      }
      condition {
        test     = "StringEquals"
        variable = "aws:SourceAccount"
        values   = [data.aws_caller_identity.this.account_id]
      }
    }
  }
}

resource "aws_s3_bucket_policy" "this" {
  for_each = local.all
  bucket   = aws_s3_bucket.this[each.key].id
  policy   = data.aws_iam_policy_document.tls_only[each.key].json

  depends_on = [aws_s3_bucket_public_access_block.this]
}
