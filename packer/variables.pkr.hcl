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
  default     = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"
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
  default = "24.04"
}

variable "nvidia_driver_branch" {
  type    = string
  default = "580"
}

variable "nvidia_driver_flavour" {
  type        = string
  description = "open or proprietary kernel modules (clusterspec/drivers.py picks it from the GPU models)."
  default     = "open"
}

variable "nvidia_driver_package" {
  type    = string
  default = "nvidia-driver-580-server-open"
}

variable "nvidia_driver_version" {
  type        = string
  description = "The exact driver release (cluster.yaml software.nvidia_driver.version); fabric manager matches it."
  default     = "580.178.04"
}

variable "nvidia_fabricmanager" {
  type        = string
  description = "1 when a cloud instance type of the spec has NVSwitch (p4d, p5): fabric manager is installed."
  default     = "0"
}

variable "efa_installer_version" {
  type        = string
  description = "AWS EFA installer version when a cloud instance type of the spec has EFA; empty: none."
  default     = ""
}

variable "efa_installer_key_fingerprint" {
  type    = string
  default = "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
}

variable "expected_gpus" {
  type        = string
  description = "GPUs of the builder instance: check.sh fails unless nvidia-smi lists exactly these."
  default     = "1"
}

variable "unattended_upgrades" {
  type        = string
  description = "0 on Kubernetes workers (every node of this image): no upgrade under a running job."
  default     = "0"
}

variable "ami_regions" {
  type        = list(string)
  description = "Regions the AMI is copied to after the bake (every other region of the spec)."
  default     = []
}

variable "package_lock_path" {
  type        = string
  description = "Where the bake downloads the image's package lock (dpkg-query -W of every package)."
  default     = "package-lock"
}

variable "cuda_version" {
  type    = string
  default = "12.9"
}

variable "containerd_version" {
  type    = string
  default = "2.2.6"
}

variable "nvidia_container_toolkit_version" {
  type    = string
  default = "1.17.8"
}

variable "kubernetes_version" {
  type    = string
  default = "1.35.8"
}

variable "kubernetes_minor" {
  type    = string
  default = "1.35"
}

variable "standard_image" {
  type        = string
  description = "The lab's standard image in its ECR registry, pre-pulled and pinned (clusterspec/data/standard_image.yaml); empty: none."
  default     = ""
}

variable "bake_instance_profile" {
  type        = string
  description = "The AWS build instance's profile (terraform/modules/iam/image_bake.tf): ECR pulls of the standard image only; empty: none."
  default     = ""
}

variable "aws_cli_key_fingerprint" {
  type        = string
  description = "AWS CLI v2 installer signing key (AWS CLI User Guide, 'Verify the integrity and authenticity of the downloaded installer files': 'FB5D B77F D5C1 18B8 0511 ADA8 A631 0ACC 4672 475C'): downloads signed otherwise are refused."
  default     = "FB5DB77FD5C118B80511ADA8A6310ACC4672475C"
}

variable "docker_apt_key_fingerprint" {
  type        = string
  description = "Docker's apt repository key (Docker docs, 'Install Docker Engine on Ubuntu': 9DC8 5822 9FC7 DD38 854A E2D8 8D81 803C 0EBF CD88): downloads signed otherwise are refused."
  default     = "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"
}

variable "nvidia_container_toolkit_key_fingerprint" {
  type        = string
  description = "NVIDIA's libnvidia-container repository key (nvidia.github.io/libnvidia-container/gpgkey, key DDCAE044F796ECB0): downloads signed otherwise are refused."
  default     = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
}

variable "kubernetes_apt_key_fingerprint" {
  type        = string
  description = "pkgs.k8s.io's Release.key (isv:kubernetes, the same key for every minor's channel): downloads signed otherwise are refused."
  default     = "DE15B14486CD377B9E876E1A234654DA9A296436"
}

variable "cuda_repo_key_fingerprint" {
  type        = string
  description = "NVIDIA's CUDA repository key (3bf863cc, shipped in cuda-keyring_1.1-1_all.deb): downloads signed otherwise are refused."
  default     = "EB693B3035CD5710E231E123A4B469963BF863CC"
}

variable "ssh_source_cidrs" {
  type        = list(string)
  description = "Where Packer's SSH to the build instance comes from: the bake host's public address as a /32, never a range (Packer's temporary security group otherwise admits 0.0.0.0/0)."

  validation {
    condition     = length(var.ssh_source_cidrs) > 0 && length([for c in var.ssh_source_cidrs : c if cidrnetmask(c) != "255.255.255.255"]) == 0
    error_message = "The ssh_source_cidrs must each be one address as a /32 (the bake host's own), never a range such as 0.0.0.0/0."
  }
}
