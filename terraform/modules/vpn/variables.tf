variable "cluster" {
  description = "Cluster name from cluster.yaml; prefixes every name."
  type        = string
}

variable "region" {
  description = "AWS region of the VPC; part of each pre-shared key's SSM name."
  type        = string
}

variable "vpc_id" {
  description = "The VPC the virtual private gateway attaches to."
  type        = string
}

variable "private_route_table_ids" {
  description = "Private route table id per zone; the gateway propagates the site routes into them."
  type        = map(string)
}

variable "sites" {
  description = "Physical sites by name: their network, their gateway's public address and BGP ASN, and the inside /30 of each of their two tunnels in this region (169.254.0.0/16, unique across the site's tunnels; provision/tunnels.py)."
  type = map(object({
    cidr         = string
    public_ip    = string
    bgp_asn      = number
    inside_cidrs = list(string)
  }))

  validation {
    condition = alltrue([
      for s in var.sites : length(s.inside_cidrs) == 2 && alltrue([
        for c in s.inside_cidrs : can(cidrnetmask(c)) && endswith(c, "/30") && startswith(c, "169.254.")
      ])
    ])
    error_message = "Each site needs two inside_cidrs, each a /30 in 169.254.0.0/16."
  }
}

variable "amazon_side_asn" {
  description = "BGP ASN of the virtual private gateway (private range 64512-65534 or 4200000000-4294967294; one per region, none a site's)."
  type        = number

  validation {
    condition     = (var.amazon_side_asn >= 64512 && var.amazon_side_asn <= 65534) || (var.amazon_side_asn >= 4200000000 && var.amazon_side_asn <= 4294967294)
    error_message = "amazon_side_asn must be a private ASN: 64512-65534 or 4200000000-4294967294."
  }
}

variable "tunnel" {
  description = "IKE/ESP proposals from cluster.yaml vpn.tunnel; the Chef cookbook configures strongSwan with the same."
  type = object({
    ike_version    = number
    ike_encryption = list(string)
    ike_integrity  = list(string)
    dh_groups      = list(number)
    esp_encryption = list(string)
    esp_integrity  = list(string)
    ike_lifetime_s = number
    esp_lifetime_s = number
    dpd_timeout_s  = number
  })
}

variable "psk_ssm_prefix" {
  description = "SSM prefix of the pre-shared keys: <prefix>/<region>/<site>/tunnel<1,2>."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key encrypting the pre-shared-key SecureStrings."
  type        = string
}
