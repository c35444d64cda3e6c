# Short-lived AWS credentials for the physical sites' servers, without long-lived keys: IAM Roles Anywhere. Each
# server holds a certificate of the sites' own CA (trust anchor) and exchanges a signature for one-hour role
# credentials through aws_signing_helper (credential_process; cookbook recipe site_credentials). The role reads
# the kubeadm join token and CA hash, and the pre-shared keys of the site named in the certificate's OU only;
# nothing writes; only gateways read tunnel keys. (SSM hybrid activation would also work, but registers every server as a managed node that
# ssm:SendCommand can run commands on, and its activation code is itself a secret to distribute.)
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  account = data.aws_caller_identity.this.account_id
  p       = data.aws_partition.this.partition
  ssm     = "arn:${local.p}:ssm:*:${local.account}:parameter"
}

resource "aws_rolesanywhere_trust_anchor" "sites" {
  name    = "${var.cluster}-sites"
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
    # only certificates of this trust anchor (no confused deputy), and only for a site of the cluster
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_rolesanywhere_trust_anchor.sites.arn]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:PrincipalTag/x509Subject/OU"
      values   = var.sites
    }
  }
}

resource "aws_iam_role" "site" {
  name                 = "${var.cluster}-site"
  description          = "Physical servers of ${var.cluster} (IAM Roles Anywhere): read join parameters and their site's VPN keys"
  assume_role_policy   = data.aws_iam_policy_document.assume.json
  max_session_duration = max(3600, var.session_duration_s) # IAM: 1 to 12 hours
}

data "aws_iam_policy_document" "site" {
  statement {
    sid       = "ReadJoinParameters"
    actions   = ["ssm:GetParameter"]
    resources = ["${local.ssm}/${var.cluster}/kubeadm/join-token", "${local.ssm}/${var.cluster}/kubeadm/ca-cert-hash"]
  }

  # Only the site's gateway (a server with the gateway role, named in the certificate's CN) reads the tunnel keys:
  # a GPU server or the NAS holds the same role and runs researchers' pods (issue 36).
  statement {
    sid     = "GatewaysReadOwnSitesTunnelKeys"
    actions = ["ssm:GetParameter"]
    # the site is the certificate's OU, which Roles Anywhere maps to this session tag
    resources = ["${local.ssm}${var.psk_ssm_prefix}/*/$${aws:PrincipalTag/x509Subject/OU}/tunnel*"]
    condition {
      test     = "StringEquals"
      variable = "aws:PrincipalTag/x509Subject/CN"
      values   = var.gateways
    }
  }

  # The lab servers' kubelet and pre-pull read the lab's own images (its ECR mirror, the autoscaler's, the standard
  # image) as the cloud nodes do (modules/iam node role): pulls only, the cluster's repositories only (issue 36).
  statement {
    sid       = "PullClusterImages"
    actions   = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    resources = ["arn:${local.p}:ecr:*:${local.account}:repository/${var.cluster}/*"]
  }

  statement {
    sid       = "EcrLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # GetAuthorizationToken supports no resource-level permissions
  }

  statement {
    sid       = "DecryptClusterSecureStrings"
    actions   = ["kms:Decrypt"]
    resources = ["arn:${local.p}:kms:*:${local.account}:key/*"]
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
}

resource "aws_iam_role_policy" "site" {
  name   = "${var.cluster}-site"
  role   = aws_iam_role.site.id
  policy = data.aws_iam_policy_document.site.json
}

resource "aws_rolesanywhere_profile" "sites" {
  name             = "${var.cluster}-sites"
  enabled          = true
  role_arns        = [aws_iam_role.site.arn]
  duration_seconds = var.session_duration_s
}
