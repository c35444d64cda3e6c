variable "cluster" {
  description = "Cluster name from cluster.yaml; names the trust anchor, profile and role and scopes every permission."
  type        = string
}

variable "ca_certificate_pem" {
  description = "PEM of the sites' certificate authority (public certificate only; it signs one certificate per server, OU = the site's name)."
  type        = string

  validation {
    condition     = startswith(trimspace(var.ca_certificate_pem), "-----BEGIN CERTIFICATE-----") && !strcontains(var.ca_certificate_pem, "PRIVATE KEY")
    error_message = "ca_certificate_pem must be a PEM certificate (BEGIN CERTIFICATE), never a private key."
  }
}

variable "sites" {
  description = "Names of the physical sites; a server's certificate must carry one of them as its OU."
  type        = list(string)

  validation {
    condition     = length(var.sites) > 0 && alltrue([for s in var.sites : can(regex("^[a-z0-9-]+$", s))])
    error_message = "sites must be non-empty names of lower-case letters, digits and dashes."
  }
}

variable "psk_ssm_prefix" {
  description = "SSM prefix of the tunnels' pre-shared keys (<prefix>/<region>/<site>/tunnel<1,2>); a server reads only its own site's."
  type        = string
}

variable "session_duration_s" {
  description = "Lifetime of the credentials a server gets per request (Roles Anywhere allows 900 to 43200; the signing helper renews them)."
  type        = number
  default     = 3600

  validation {
    condition     = var.session_duration_s >= 900 && var.session_duration_s <= 43200
    error_message = "session_duration_s must be 900 to 43200 seconds."
  }
}

variable "gateways" {
  description = "Names (certificate CNs) of the sites' servers with the gateway role: the only ones that read tunnel keys."
  type        = list(string)
  default     = []
}
