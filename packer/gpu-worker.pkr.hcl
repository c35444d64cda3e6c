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
    "NVIDIA_DRIVER_VERSION=${var.nvidia_driver_version}",
    "NVIDIA_FABRICMANAGER=${var.nvidia_fabricmanager}",
    "EFA_INSTALLER_VERSION=${var.efa_installer_version}",
    "EFA_INSTALLER_KEY_FINGERPRINT=${var.efa_installer_key_fingerprint}",
    "AWS_CLI_KEY_FINGERPRINT=${var.aws_cli_key_fingerprint}",
    "DOCKER_APT_KEY_FINGERPRINT=${var.docker_apt_key_fingerprint}",
    "NVIDIA_CONTAINER_TOOLKIT_KEY_FINGERPRINT=${var.nvidia_container_toolkit_key_fingerprint}",
    "KUBERNETES_APT_KEY_FINGERPRINT=${var.kubernetes_apt_key_fingerprint}",
    "CUDA_REPO_KEY_FINGERPRINT=${var.cuda_repo_key_fingerprint}",
    "EXPECTED_GPUS=${var.expected_gpus}",
    "UNATTENDED_UPGRADES=${var.unattended_upgrades}",
    "CUDA_VERSION=${var.cuda_version}",
    "CONTAINERD_VERSION=${var.containerd_version}",
    "NVIDIA_CONTAINER_TOOLKIT_VERSION=${var.nvidia_container_toolkit_version}",
    "KUBERNETES_VERSION=${var.kubernetes_version}",
    "KUBERNETES_MINOR=${var.kubernetes_minor}",
    "STANDARD_IMAGE=${var.standard_image}",
    "DEBIAN_FRONTEND=noninteractive",
  ]
  tags = {
    Name                    = var.ami_name
    "research.cluster/role" = "gpu-worker"
    Cluster                 = var.cluster
    Ubuntu                  = var.ubuntu_version
    NvidiaDriver            = "${var.nvidia_driver_version}-${var.nvidia_driver_flavour}"
    Cuda                    = var.cuda_version
    Kubernetes              = var.kubernetes_version
  }
}

source "amazon-ebs" "ubuntu" {
  region          = var.region
  instance_type   = var.instance_type
  ami_name        = var.ami_name
  ami_description = "GPU worker for ${var.cluster}: Ubuntu ${var.ubuntu_version}, NVIDIA ${var.nvidia_driver_version} (${var.nvidia_driver_flavour}), CUDA ${var.cuda_version}, Kubernetes ${var.kubernetes_version}"
  # One bake, copied to every other region of the spec; root snapshots encrypted (each region's default EBS key).
  ami_regions            = var.ami_regions
  encrypt_boot           = true
  snapshot_tags          = local.tags
  custom_endpoint_ec2    = var.ec2_endpoint
  skip_region_validation = var.ec2_endpoint != ""
  ssh_username           = "ubuntu"
  tags                   = local.tags
  run_tags               = local.tags
  run_volume_tags        = local.tags

  # The build instance as every instance of the cluster (issue 26): IMDSv2 only, one hop (nothing on it but the
  # bake's own scripts reaches the instance's credentials), and SSH only from the bake host's own address
  # (invoke bake-ami passes it: provision/packer/variables.py ssh_source_cidrs), never from the internet.
  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }
  temporary_security_group_source_cidrs = var.ssh_source_cidrs

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
    # prepull-images.sh reads the lab's ECR with this role (the local build runs no script: no profile)
    iam_instance_profile = var.bake_instance_profile
  }

  source "amazon-ebs.ubuntu" {
    name         = "local"
    communicator = "none"
  }

  # base.sh upgrades the system, kernel included: reboot into the newest kernel, so that the driver module DKMS
  # builds next is the one that loads, and check.sh sees it loaded with nvidia-smi answering.
  provisioner "shell" {
    except           = ["amazon-ebs.local"]
    environment_vars = local.script_env
    execute_command  = "chmod +x {{ .Path }}; sudo -E {{ .Vars }} bash '{{ .Path }}'"
    scripts          = ["${path.root}/scripts/base.sh"]
  }

  provisioner "shell" {
    except            = ["amazon-ebs.local"]
    inline            = ["sudo systemctl reboot"]
    expect_disconnect = true
  }

  provisioner "shell" {
    except           = ["amazon-ebs.local"]
    pause_before     = "30s"
    environment_vars = local.script_env
    execute_command  = "chmod +x {{ .Path }}; sudo -E {{ .Vars }} bash '{{ .Path }}'"
    # One script per concern, in this order (base.sh first, above); chef/cookbooks/cluster_node runs the same list.
    scripts = [
      "${path.root}/scripts/aws-cli.sh",
      "${path.root}/scripts/nvidia-driver.sh",
      "${path.root}/scripts/gpu-hardware.sh",
      "${path.root}/scripts/fabric-manager.sh",
      "${path.root}/scripts/efa.sh",
      "${path.root}/scripts/apt-repositories.sh",
      "${path.root}/scripts/cuda.sh",
      "${path.root}/scripts/containerd.sh",
      "${path.root}/scripts/kubernetes.sh",
      "${path.root}/scripts/prepull-images.sh",
      "${path.root}/scripts/flannel-prereqs.sh",
      "${path.root}/scripts/storage-client.sh",
      "${path.root}/scripts/check.sh",
    ]
  }

  # The package lock: every installed package at its version, recorded beside the AMI id (build/ami/) so the
  # physical servers install exactly these versions (Chef), and a later bake can be compared with this one.
  provisioner "shell" {
    except = ["amazon-ebs.local"]
    inline = ["dpkg-query -W -f '$${binary:Package} $${Version}\\n' | sort >/tmp/package-lock"]
  }

  provisioner "file" {
    except      = ["amazon-ebs.local"]
    direction   = "download"
    source      = "/tmp/package-lock"
    destination = var.package_lock_path
  }
}
