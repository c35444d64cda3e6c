variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "Region of the issuer bucket (the primary region)."
  type        = string
}

variable "researchers" {
  description = "Researcher user name => Kubernetes namespace; each namespace's default ServiceAccount gets an S3 role."
  type        = map(string)
}

variable "datasets_bucket_arn" {
  description = "The datasets bucket: researchers' pods read it."
  type        = string
}

variable "results_bucket_arn" {
  description = "The results bucket: each researcher's pods write under <user>/."
  type        = string
}

variable "s3_kms_key_arn" {
  description = "The buckets' KMS key (decrypt to read, generate data keys to write)."
  type        = string
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
