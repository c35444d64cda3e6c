variable "cluster" {
  description = "Cluster name from cluster.yaml; names the endpoint and its security group."
  type        = string
}

variable "vpc_id" {
  description = "The primary region's VPC (its private zone is associated with it)."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets the endpoint's addresses go in, one per zone; at least two zones (a Route 53 Resolver requirement)."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 2 && length(var.subnet_ids) <= 6
    error_message = "subnet_ids: a Resolver endpoint needs 2 to 6 subnets (one address in each)."
  }
}

variable "client_cidrs" {
  description = "Networks that may query the endpoint: the physical sites (over the site-to-site VPN)."
  type        = list(string)

  validation {
    condition     = alltrue([for c in var.client_cidrs : can(cidrnetmask(c)) && c != "0.0.0.0/0"])
    error_message = "client_cidrs must be IPv4 networks, never 0.0.0.0/0."
  }
}
