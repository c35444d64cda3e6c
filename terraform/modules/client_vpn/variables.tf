variable "cluster" {
  description = "Cluster name from cluster.yaml; prefixes every name."
  type        = string
}

variable "region" {
  description = "AWS region of the endpoint (the primary region)."
  type        = string
}

variable "vpc_id" {
  description = "The VPC the endpoint's network interfaces live in."
  type        = string
}

variable "vpc_cidr" {
  description = "That VPC's CIDR (its route is added by AWS; its resolver serves the laptops' DNS)."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnet ids (by zone) to associate; two zones give the endpoint high availability."
  type        = map(string)
}

variable "client_cidr" {
  description = "Address pool for laptops (cluster.yaml vpn.client_cidr)."
  type        = string
}

variable "split_tunnel" {
  description = "Send only the cluster's networks through the VPN (cluster.yaml vpn.split_tunnel)."
  type        = bool
}

variable "routes" {
  description = "Networks laptops reach besides this VPC, by name: the other VPCs, the physical sites, the pod network."
  type        = map(string)
}

variable "server_certificate_arn" {
  description = "ACM ARN of the endpoint's server certificate (imported into ACM; no key ever in the repository)."
  type        = string
}

variable "client_root_certificate_arn" {
  description = "ACM ARN of the CA that signs laptop client certificates (mutual TLS)."
  type        = string
}

variable "kms_key_arn" {
  description = "KMS key encrypting the connection-log group."
  type        = string
}

variable "log_retention_days" {
  description = "How long connection logs are kept."
  type        = number
  default     = 365
}

variable "egress" {
  description = "What laptops may open beyond this VPC's API server, SSH and DNS: name => {cidr, proto, from, to} (the pod network, every port; with a full tunnel HTTP(S) to the internet)."
  type = map(object({
    cidr  = string
    proto = string
    from  = optional(number)
    to    = optional(number)
  }))
}
