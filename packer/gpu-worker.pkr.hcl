# The Ubuntu GPU worker image. Variables: variables.pkr.hcl (values generated from cluster.yaml).
# Two builds of one source: "gpu-worker" (SSH, runs every script) for AWS, and "local" (no communicator,
# so no script runs; see docs/images.md) for the laptop bake against a moto server.

locals {
  # The scripts read only these; the Chef cookbook runs the same scripts with the same variables.
  script_env = [
    "UBUNTU_VERSION=${var.ubuntu_version}",
    "NVIDIA_DRIVER_BRANCH=${var.nvidia_driver_branch}",
    "NVIDIA_DRIVER_FLAVOUR=${var.nvidia_driver_flavour}",
    "NVIDIA_DRIVER_PACKAGE=${var.nvidia_driver_package}",
    "CUDA_VERSION=${var.cuda_version}",
    "CONTAINERD_VERSION=${var.containerd_version}",
    "NVIDIA_CONTAINER_TOOLKIT_VERSION=${var.nvidia_container_toolkit_version}",
    "KUBERNETES_VERSION=${var.kubernetes_version}",
    "KUBERNETES_MINOR=${var.kubernetes_minor}",
    "DEBIAN_FRONTEND=noninteractive",
  ]
  tags = {
    Name                    = var.ami_name
    "research.cluster/role" = "gpu-worker"
    Cluster                 = var.cluster
    Ubuntu                  = var.ubuntu_version
    NvidiaDriver            = "${var.nvidia_driver_branch}-${var.nvidia_driver_flavour}"
    Cuda                    = var.cuda_version
    Kubernetes              = var.kubernetes_version
  }
}

source "amazon-ebs" "ubuntu" {
  region                 = var.region
  instance_type          = var.instance_type
  ami_name               = var.ami_name
  ami_description        = "GPU worker for ${var.cluster}: Ubuntu ${var.ubuntu_version}, NVIDIA ${var.nvidia_driver_branch} (${var.nvidia_driver_flavour}), CUDA ${var.cuda_version}, Kubernetes ${var.kubernetes_version}"
  custom_endpoint_ec2    = var.ec2_endpoint
  skip_region_validation = var.ec2_endpoint != ""
  ssh_username           = "ubuntu"
  tags                   = local.tags
  run_tags               = local.tags

  source_ami_filter {
    filters = {
      name                = var.source_ami_name
      virtualization-type = "hvm"
      root-device-type    = "ebs"
      architecture        = "x86_64"
    }
    owners      = ["099720109477"] # Canonical
    most_recent = true
  }

  launch_block_device_mappings {
    device_name           = "/dev/sda1"
    volume_size           = var.root_volume_gib
    volume_type           = "gp3"
    iops                  = 3000 # gp3's baseline; Packer 1.6.6 insists on both for gp3
    throughput            = 125
    delete_on_termination = true
  }
}

build {
  source "amazon-ebs.ubuntu" {
    name = "gpu-worker"
  }

  source "amazon-ebs.ubuntu" {
    name         = "local"
    communicator = "none"
  }

  provisioner "shell" {
    except           = ["amazon-ebs.local"]
    environment_vars = local.script_env
    execute_command  = "chmod +x {{ .Path }}; sudo -E {{ .Vars }} bash '{{ .Path }}'"
    # One script per concern, in this order; chef/cookbooks/cluster_node runs the same list.
    scripts = [
      "${path.root}/scripts/base.sh",
      "${path.root}/scripts/aws-cli.sh",
      "${path.root}/scripts/nvidia-driver.sh",
      "${path.root}/scripts/cuda.sh",
      "${path.root}/scripts/containerd.sh",
      "${path.root}/scripts/kubernetes.sh",
      "${path.root}/scripts/flannel-prereqs.sh",
      "${path.root}/scripts/storage-client.sh",
      "${path.root}/scripts/check.sh",
    ]
  }
}
