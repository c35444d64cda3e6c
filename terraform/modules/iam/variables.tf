variable "cluster" {
  description = "Cluster name from cluster.yaml; names the roles and scopes every permission."
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

variable "efs_csi_subject" {
  description = "The EFS CSI node plugin's ServiceAccount as a token subject (system:serviceaccount:kube-system:efs-csi-node)."
  type        = string
  default     = "system:serviceaccount:kube-system:efs-csi-node"
}

variable "bake_region" {
  description = "Where Packer builds the image (the primary region): every EC2 write of the image builder is limited to it, copies to var.regions."
  type        = string
}

variable "regions" {
  description = "The cluster's regions: the image is copied there and its SSM parameter written there."
  type        = list(string)
}

variable "image_builder_ci_principal_arns" {
  description = "CI principals (roles) that may assume the image builder, with the ExternalId below."
  type        = list(string)
  default     = []
}

variable "image_builder_external_id" {
  description = "The ExternalId the CI principals must present (agreed with the CI system; not a secret, a confused-deputy guard)."
  type        = string
  default     = ""

  validation {
    condition     = length(var.image_builder_external_id) == 0 || length(var.image_builder_external_id) >= 12
    error_message = "image_builder_external_id: at least 12 characters (or empty without CI principals)."
  }
}

variable "image_builder_mfa_principal_arns" {
  description = "People (users or roles) that may assume the image builder with MFA."
  type        = list(string)
  default     = []
}
