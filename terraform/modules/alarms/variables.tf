variable "cluster" {
  description = "Cluster name from cluster.yaml."
  type        = string
}

variable "region" {
  description = "The region the alarms watch."
  type        = string
}

variable "topic_arn" {
  description = "The region's alert topic (../alert_topic); alarm and OK actions."
  type        = string
}

variable "vpn_connections" {
  description = "Site name => the region's VPN connection to it (../vpn output connection_ids)."
  type        = map(string)
  default     = {}
}

variable "api" {
  description = "The primary region's API load balancer and target group (ARN suffixes, ../control_plane) and the number of members; null elsewhere."
  type = object({
    load_balancer = string
    target_group  = string
    members       = number
  })
  default = null
}

variable "failover_function" {
  description = "The pod gateway's failover Lambda function (../pod_gateway), or empty."
  type        = string
  default     = ""
}

variable "etcd" {
  description = "The etcd snapshots' CloudWatch namespace and hours between snapshots (../etcd_backup); null elsewhere."
  type = object({
    namespace = string
    every_h   = number
  })
  default = null
}

variable "certificates" {
  description = "Name => ACM certificate ARN to watch for expiry (the Client VPN server certificate and client CA)."
  type        = map(string)
  default     = {}
}

variable "warn_days" {
  description = "Alarm this many days before a certificate expires (cluster.yaml operations.certificate_warn_days)."
  type        = number
  default     = 30
}
