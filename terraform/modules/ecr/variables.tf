variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "repository" {
  description = "Repository name, <cluster>/<researchers.ecr_repository> (the `lab` command pushes here)."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key encrypting the images."
  type        = string
}

variable "replicate_to" {
  description = "Regions the registry replicates this repository to (set in the primary region only; empty elsewhere)."
  type        = list(string)
  default     = []
}

variable "pull_principal_arns" {
  description = "IAM roles allowed to pull (the nodes' role); the account's own principals with ECR permissions may always push and pull."
  type        = list(string)
  default     = []
}

variable "keep_images" {
  description = "Tagged images kept; older ones expire (each tag is a content hash, so a rebuild of the same code reuses its image)."
  type        = number
  default     = 2000
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
