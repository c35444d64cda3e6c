# The researchers' image repository in one region. Tags are content hashes of the build context (`lab image
# build`), so they are immutable: the same code is never pushed as two different images. The primary region's
# registry replicates the repository to the other regions, whose own repository (this module, applied there)
# sets the scanning, encryption and lifecycle the replicas get.
resource "aws_ecr_repository" "this" {
  name                 = var.repository
  image_tag_mutability = "IMMUTABLE"

  image_scanning_configuration {
    scan_on_push = true
  }

  encryption_configuration {
    encryption_type = "KMS"
    kms_key         = var.kms_key_arn
  }

  tags = merge(var.tags, { "research.cluster/cluster" = var.cluster })
}

resource "aws_ecr_lifecycle_policy" "this" {
  repository = aws_ecr_repository.this.name
  policy = jsonencode({
    rules = [
      {
        rulePriority = 1
        description  = "Untagged layers left by interrupted pushes"
        selection = {
          tagStatus   = "untagged"
          countType   = "sinceImagePushed"
          countUnit   = "days"
          countNumber = 1
        }
        action = { type = "expire" }
      },
      {
        rulePriority = 2
        description  = "Keep the newest ${var.keep_images} images"
        selection = {
          tagStatus   = "any"
          countType   = "imageCountMoreThan"
          countNumber = var.keep_images
        }
        action = { type = "expire" }
      },
    ]
  })
}

resource "aws_ecr_repository_policy" "pull" {
  count      = length(var.pull_principal_arns) > 0 ? 1 : 0
  repository = aws_ecr_repository.this.name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "NodesPull"
      Effect    = "Allow"
      Principal = { AWS = var.pull_principal_arns }
      Action    = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"]
    }]
  })
}

data "aws_caller_identity" "current" {}

# One replication configuration per registry (account and region): only the primary region's root sets it.
resource "aws_ecr_replication_configuration" "this" {
  count = length(var.replicate_to) > 0 ? 1 : 0

  replication_configuration {
    rule {
      dynamic "destination" {
        for_each = var.replicate_to
        content {
          region      = destination.value
          registry_id = data.aws_caller_identity.current.account_id
        }
      }

      repository_filter {
        filter      = var.repository
        filter_type = "PREFIX_MATCH"
      }
    }
  }
}
