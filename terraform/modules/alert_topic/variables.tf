variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "name" {
  description = "The topic's name (<cluster>-alerts in the primary region, <cluster>-<region>-alerts elsewhere)."
  type        = string
}

variable "email" {
  description = "cluster.yaml operations.alerts.email, or empty."
  type        = string
  default     = ""
}

variable "webhook" {
  description = "cluster.yaml operations.alerts.webhook (HTTPS), or empty."
  type        = string
  default     = ""

  validation {
    condition     = var.webhook == "" || startswith(var.webhook, "https://")
    error_message = "webhook must be an https:// URL."
  }
}

variable "alertmanager" {
  description = "The OIDC provider and issuer host of the cluster's service accounts and Alertmanager's ServiceAccount; null: no Alertmanager role."
  type = object({
    provider_arn    = string
    issuer          = string
    namespace       = string
    service_account = string
  })
  default = null
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
