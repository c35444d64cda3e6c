# The control plane's etcd snapshots (docs/operations.md, "etcd"): one bucket in the primary region, encrypted
# with the cluster's key (every object SSE-KMS with it: the bucket policy refuses anything else), versioned,
# snapshots expired after keep_days by lifecycle, TLS only. The members' script (../control_plane/scripts/etcd.sh)
# writes snapshots/ and pki/; the control plane's role may put and get objects here and nothing else (no delete:
# a compromised member cannot erase the backups; the lifecycle does). AWS Backup copies the bucket to a second
# region (../backup).
# Also the kubelets' key hashes (issue 36, node identity): every instance of the node and control-plane roles may put
# exactly node-keys/<its aws:userid> (<role id>:<instance id>), the SHA-256 of its kubelet's bootstrap public key;
# the control plane's CSR approver reads node-keys/* (../control_plane/scripts/bootstrap.sh, approve_csrs).
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  bucket    = "${var.cluster}-etcd-backups-${data.aws_caller_identity.this.account_id}"
  parameter = "/${var.cluster}/etcd/last-backup"
  namespace = "${var.cluster}/etcd"
  node_keys = "node-keys"
}

resource "aws_s3_bucket" "this" {
  #checkov:skip=CKV_AWS_144:AWS Backup copies the bucket to the second region (../backup), with its own retention
  #checkov:skip=CKV2_AWS_62:No consumer of bucket events; the script records each snapshot in SSM and CloudWatch
  #checkov:skip=CKV_AWS_18:The access-log bucket (global root) admits only the data buckets; writes come from the control plane role alone, logged by CloudTrail
  bucket = local.bucket
  tags   = merge(var.tags, { Name = local.bucket, "research.cluster/purpose" = "etcd-backups" })
}

resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "this" {
  bucket = aws_s3_bucket.this.id
  versioning_configuration {
    status = "Enabled" # also what AWS Backup needs to back an S3 bucket up
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket                  = aws_s3_bucket.this.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  bucket = aws_s3_bucket.this.id

  rule {
    id     = "expire-snapshots"
    status = "Enabled"

    filter {}

    expiration {
      days = var.keep_days
    }

    noncurrent_version_expiration {
      noncurrent_days = 7
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }

  rule {
    id     = "remove-expired-delete-markers"
    status = "Enabled"

    filter {}

    expiration {
      expired_object_delete_marker = true
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

data "aws_iam_policy_document" "bucket" {
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.this.arn, "${aws_s3_bucket.this.arn}/*"]
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

  # Amazon S3 User Guide, "Specifying server-side encryption with AWS KMS": an object that names a key must name
  # the cluster's (one that names none gets it from the bucket's default encryption)
  statement {
    sid       = "DenyOtherKeys"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.this.arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Null"
      variable = "s3:x-amz-server-side-encryption-aws-kms-key-id"
      values   = ["false"]
    }
    condition {
      test     = "ArnNotEquals" # the key's type is ARN (Service Authorization Reference, Amazon S3 condition keys)
      variable = "s3:x-amz-server-side-encryption-aws-kms-key-id"
      values   = [var.kms_key_arn]
    }
  }
}

resource "aws_s3_bucket_policy" "this" {
  bucket     = aws_s3_bucket.this.id
  policy     = data.aws_iam_policy_document.bucket.json
  depends_on = [aws_s3_bucket_public_access_block.this]
}

# The control plane's right to write snapshots, read them back for a restore, record the last one and count it.
data "aws_iam_policy_document" "control_plane" {
  statement {
    sid       = "WriteAndReadSnapshots"
    actions   = ["s3:PutObject", "s3:GetObject"]
    resources = ["${aws_s3_bucket.this.arn}/snapshots/*", "${aws_s3_bucket.this.arn}/pki/*"]
  }

  # the API audit log's rotated files (scripts/etcd.sh ship-audit): written, never read back nor deleted by a member
  statement {
    sid       = "ShipAuditLogs"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.this.arn}/audit/*"]
  }

  # the CSR approver: a request for instance X is approved only with the key X published (bootstrap.sh key_verdict)
  statement {
    sid       = "ReadPublishedKubeletKeys"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.this.arn}/${local.node_keys}/*"]
  }

  statement {
    sid       = "ListSnapshots"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.this.arn]
  }

  statement {
    sid       = "UseTheClusterKeyThroughS3"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [var.kms_key_arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.${var.region}.amazonaws.com"]
    }
  }

  statement {
    sid       = "RecordTheLastSnapshot"
    actions   = ["ssm:PutParameter", "ssm:GetParameter"]
    resources = ["arn:${data.aws_partition.this.partition}:ssm:${var.region}:${data.aws_caller_identity.this.account_id}:parameter${local.parameter}"]
  }

  statement {
    sid       = "CountSnapshots"
    actions   = ["cloudwatch:PutMetricData"]
    resources = ["*"] # PutMetricData supports no resource-level permissions; the namespace condition scopes it
    condition {
      test     = "StringEquals"
      variable = "cloudwatch:namespace"
      values   = [local.namespace]
    }
  }
}

resource "aws_iam_role_policy" "control_plane" {
  name   = "etcd-backups"
  role   = var.control_plane_role_name
  policy = data.aws_iam_policy_document.control_plane.json
}

# An instance publishes its own kubelet key and no other's: ${aws:userid} of an EC2 instance's role session is
# <role id>:<instance id> (IAM User Guide, "IAM policy elements: Variables and tags"; EC2 names the session after
# the instance), so an instance can write only the object the approver reads for that instance.
data "aws_iam_policy_document" "publish_kubelet_key" {
  statement {
    sid       = "PublishOwnKubeletKey"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.this.arn}/${local.node_keys}/$${aws:userid}"]
  }

  statement {
    sid       = "EncryptThroughS3"
    actions   = ["kms:GenerateDataKey"]
    resources = [var.kms_key_arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.${var.region}.amazonaws.com"]
    }
  }
}

resource "aws_iam_role_policy" "publish_kubelet_key" {
  for_each = toset([var.node_role_name, var.control_plane_role_name])
  name     = "publish-kubelet-key"
  role     = each.value
  policy   = data.aws_iam_policy_document.publish_kubelet_key.json
}
