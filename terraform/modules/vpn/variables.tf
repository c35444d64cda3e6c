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
  description = "Physical sites by name: their network and their strongSwan gateway's public address and BGP ASN."
  type = map(object({
    cidr      = string
    public_ip = string
    bgp_asn   = number
  }))
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
