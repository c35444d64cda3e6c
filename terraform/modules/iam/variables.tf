variable "cluster" {
  description = "Cluster name from cluster.yaml; names the roles and scopes every permission."
  type        = string
}

variable "bucket_arns" {
  description = "ARNs of the cluster's data buckets (datasets, results, ...) that nodes read and write."
  type        = list(string)
}

variable "s3_kms_key_arn" {
  description = "The buckets' KMS key."
  type        = string
}
