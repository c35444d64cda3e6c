# Every value below is generated from cluster.yaml by provision/packer/variables.py into
# build/packer/<region>/variables.pkrvars.json; the defaults only make `packer validate` possible without it.

variable "cluster" {
  type        = string
  description = "The cluster's name (cluster.yaml: name); tags and the AMI name carry it."
  default     = "cluster"
}

variable "region" {
  type    = string
  default = "us-west-2"
}

variable "instance_type" {
  type        = string
  description = "Builder instance: one with a GPU so the check script sees the driver load."
  default     = "g4dn.xlarge"
}

variable "ami_name" {
  type    = string
  default = "gpu-worker"
}

variable "source_ami_name" {
  type        = string
  description = "Canonical's image name pattern for the spec's Ubuntu release."
  default     = "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*"
}

variable "root_volume_gib" {
  type    = number
  default = 40
}

variable "ec2_endpoint" {
  type        = string
  description = "EC2 API endpoint; empty for AWS, the moto server's URL for the local bake."
  default     = ""
}

variable "ubuntu_version" {
  type    = string
  default = "22.04"
}

variable "nvidia_driver_branch" {
  type    = string
  default = "570"
}

variable "nvidia_driver_flavour" {
  type        = string
  description = "open or proprietary kernel modules (provision/drivers.py picks it from the GPU models)."
  default     = "open"
}

variable "nvidia_driver_package" {
  type    = string
  default = "nvidia-driver-570-server-open"
}

variable "cuda_version" {
  type    = string
  default = "12.8"
}

variable "containerd_version" {
  type    = string
  default = "1.7.24"
}

variable "nvidia_container_toolkit_version" {
  type    = string
  default = "1.17.4"
}

variable "kubernetes_version" {
  type    = string
  default = "1.31.4"
}

variable "kubernetes_minor" {
  type    = string
  default = "1.31"
}
