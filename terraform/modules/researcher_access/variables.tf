variable "cluster" {
  description = "Cluster name from cluster.yaml; names the trust anchor, profile and role."
  type        = string
}

variable "region" {
  description = "The primary region (the researchers' image repository replicates from there)."
  type        = string
}

variable "ca_certificate_pem" {
  description = "PEM of the lab's VPN CA (public certificate only; `invoke vpn-ca` makes it, `invoke add-user` issues the laptops' certificates from it)."
  type        = string

  validation {
    condition     = startswith(trimspace(var.ca_certificate_pem), "-----BEGIN CERTIFICATE-----") && !strcontains(var.ca_certificate_pem, "PRIVATE KEY")
    error_message = "ca_certificate_pem must be a PEM certificate (BEGIN CERTIFICATE), never a private key."
  }
}

variable "users" {
  description = "The spec's researchers: a certificate's CN must be one of them."
  type        = list(string)
}

variable "results_bucket_arn" {
  description = "The results bucket: each researcher reads and writes <user>/ only (code snapshots and results)."
  type        = string
}

variable "datasets_bucket_arn" {
  description = "The datasets bucket (read only)."
  type        = string
}

variable "s3_kms_key_arn" {
  description = "The buckets' KMS key."
  type        = string
}

variable "repository" {
  description = "The researchers' ECR repository (<cluster>/<researchers.ecr_repository>)."
  type        = string
}
