# Roles of the cluster, each with the least it needs:
#   <cluster>-node           workers and pod gateways: read the join parameters, pull from ECR. Nothing else: no data
#                            bucket (pods get S3 through IRSA, one role per researcher's namespace:
#                            ../service_account_issuer) and no EFS (the CSI driver mounts through access points as
#                            <cluster>-efs-csi-node, efs_csi.tf), so root on a node reads no researcher's data
#   <cluster>-control-plane  control plane: the node's rights plus publishing the join parameters
#   <cluster>-autoscaler     assumed only with the autoscaler ServiceAccount's token (IRSA);
#                            Describe on "*"; SetDesiredCapacity/TerminateInstanceInAutoScalingGroup only on
#                            groups tagged k8s.io/cluster-autoscaler/<cluster>=owned
#   <cluster>-image-builder  Packer's amazon-ebs builder and publishing /<cluster>/ami/gpu-worker
data "aws_caller_identity" "this" {}
data "aws_partition" "this" {}

locals {
  account = data.aws_caller_identity.this.account_id
  p       = data.aws_partition.this.partition
  ssm     = "arn:${local.p}:ssm:*:${local.account}:parameter/${var.cluster}"
  kubeadm = "${local.ssm}/kubeadm"
  # Regional cluster keys carry the alias alias/<cluster> (modules/kms); rights on them go through SSM only.
  cluster_keys = "arn:${local.p}:kms:*:${local.account}:key/*"
}

data "aws_iam_policy_document" "ec2_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "node" {
  statement {
    sid       = "ReadJoinParameters"
    actions   = ["ssm:GetParameter"]
    resources = ["${local.kubeadm}/join-token", "${local.kubeadm}/ca-cert-hash"]
  }

  statement {
    sid       = "DecryptClusterSecureStrings"
    actions   = ["kms:Decrypt"]
    resources = [local.cluster_keys]
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

  statement {
    sid = "PullClusterImages"
    actions = [
      "ecr:BatchCheckLayerAvailability",
      "ecr:BatchGetImage",
      "ecr:GetDownloadUrlForLayer",
    ]
    resources = ["arn:${local.p}:ecr:*:${local.account}:repository/${var.cluster}/*"]
  }

  statement {
    sid       = "EcrLogin"
    actions   = ["ecr:GetAuthorizationToken"]
    resources = ["*"] # GetAuthorizationToken supports no resource-level permissions
  }
}

resource "aws_iam_policy" "node" {
  name        = "${var.cluster}-node"
  description = "Kubernetes nodes of ${var.cluster}: join parameters, ECR pulls"
  policy      = data.aws_iam_policy_document.node.json
}

resource "aws_iam_role" "node" {
  name               = "${var.cluster}-node"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy_attachment" "node" {
  role       = aws_iam_role.node.name
  policy_arn = aws_iam_policy.node.arn
}

resource "aws_iam_instance_profile" "node" {
  name = "${var.cluster}-node"
  role = aws_iam_role.node.name
}
