variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "purposes" {
  description = "Bucket purposes from cluster.yaml storage.s3.buckets; each becomes <cluster>-<purpose>-<account id>."
  type        = list(string)
}

variable "noncurrent_version_days" {
  description = "Days a replaced object version is kept (cluster.yaml storage.s3.noncurrent_version_days)."
  type        = number
}
