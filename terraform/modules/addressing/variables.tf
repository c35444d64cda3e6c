variable "vpc_cidr" {
  description = "The region's VPC CIDR from cluster.yaml (a /16 to a /24)."
  type        = string

  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0)) && tonumber(split("/", var.vpc_cidr)[1]) >= 16 && tonumber(split("/", var.vpc_cidr)[1]) <= 24
    error_message = "vpc_cidr must be an IPv4 CIDR from /16 to /24, e.g. 10.0.0.0/16."
  }
}

variable "zones" {
  description = "The region's availability zones in spec order; the index of a zone is its subnet number."
  type        = list(string)

  validation {
    condition     = length(var.zones) >= 1 && length(var.zones) <= 7 && length(distinct(var.zones)) == length(var.zones)
    error_message = "zones must list 1 to 7 distinct availability zones (the eighth private-sized block holds the public subnets)."
  }
}
