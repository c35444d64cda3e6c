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

variable "oidc_provider_arn" {
  description = "The cluster's IAM OIDC provider (module service_account_issuer): the autoscaler's role trusts it."
  type        = string
}

variable "oidc_issuer" {
  description = "The issuer without https:// (<bucket>.s3.<region>.amazonaws.com): the prefix of its condition keys."
  type        = string
}

variable "autoscaler_subject" {
  description = "The autoscaler's ServiceAccount as a token subject, system:serviceaccount:<namespace>:<name>."
  type        = string
}
