# SSH machines for ad-hoc work: a few GPU and CPU instances in the primary region, homes on EFS, the spec's users
# and keys, reachable over the Client VPN only (their one security group admits port 22 from its pool, nothing
# else), with private DNS names <group>-<n>.ssh.<domain>.
locals {
  zones = sort(keys(var.subnet_ids))
  machines = merge([
    for g in var.groups : {
      for i in range(g.count) : "${g.name}-${i + 1}" => {
        group         = g.name
        instance_type = g.instance_type
        gpu           = g.gpus > 0
        index         = i
      }
    }
  ]...)
  tags = merge(var.tags, { "research.cluster/cluster" = var.cluster, "research.cluster/role" = "ssh" })
  user_data = base64gzip(templatefile("${path.module}/templates/ssh.sh.tftpl", {
    file_system_id        = var.efs_file_system_id
    access_points         = var.efs_access_points
    datasets_access_point = var.efs_datasets_access_point
    efs_mount             = var.efs_mount
    efs_utils_version     = var.efs_utils_version
    efs_utils_commit      = var.efs_utils_commit
    efs_utils_sha256      = var.efs_utils_sha256
    efs_utils_script      = file("${path.module}/scripts/efs_utils.sh")
    users                 = var.users
    idle_stop_min         = var.idle_stop_min
    idle_stop_script      = file("${path.module}/scripts/idle_stop.sh")
  }))
}

resource "aws_security_group" "ssh" {
  name        = "${var.cluster}-ssh-machines"
  description = "SSH from the Client VPN pool only"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

# Laptops arrive with the address of the Client VPN endpoint's network interface (the endpoint translates
# them: AWS Client VPN Administrator Guide, "Security groups"), never from the VPN pool: the rule names the
# endpoint's security group (issue 26; a rule for the pool matched nothing).
resource "aws_vpc_security_group_ingress_rule" "ssh" {
  #checkov:skip=CKV_AWS_24:The source is the Client VPN endpoint's security group (referenced_security_group_id), not 0.0.0.0/0; checkov's AbsSecurityGroupUnrestrictedIngress.contains_violation knows only cidr_ipv4/cidr_ipv6, security_groups and source_security_group_id and counts a rule with none of them as open to all.
  security_group_id            = aws_security_group.ssh.id
  description                  = "SSH from laptops on the Client VPN"
  referenced_security_group_id = var.client_security_group_id
  ip_protocol                  = "tcp"
  from_port                    = 22
  to_port                      = 22
}

# Every port of the cluster networks (EFS, the API server, jobs, the pod gateways) except the nodes' own: flannel's
# VXLAN (UDP 8472) would let a shell user inject packets into the pod network as any pod, and the kubelet
# (TCP 10250) is the nodes' to serve the API server, never a researcher's (issue 36; provision/terraform/ports.py
# NODES_ONLY). The group is stateful: replies to connections the nodes open are let through.
locals {
  cluster_ports = {
    tcp-below-kubelet = ["tcp", 0, 10249]
    tcp-above-kubelet = ["tcp", 10251, 65535]
    udp-below-vxlan   = ["udp", 0, 8471]
    udp-above-vxlan   = ["udp", 8473, 65535]
    icmp              = ["icmp", -1, -1]
  }
  cluster_egress = {
    for pair in setproduct(keys(local.cluster_ports), var.cluster_cidrs) :
    "${pair[0]} ${pair[1]}" => concat(local.cluster_ports[pair[0]], [pair[1]])
  }
}

resource "aws_vpc_security_group_egress_rule" "cluster" {
  for_each          = local.cluster_egress
  security_group_id = aws_security_group.ssh.id
  description       = "${each.key} to the cluster networks (not VXLAN, not the kubelet)"
  cidr_ipv4         = each.value[3]
  ip_protocol       = each.value[0]
  from_port         = each.value[1]
  to_port           = each.value[2]
}

# Packages and pip through the NAT gateways, HTTP(S) only, as the cluster's own group allows.
resource "aws_vpc_security_group_egress_rule" "cluster_web" {
  for_each          = { https = 443, http = 80 }
  security_group_id = aws_security_group.ssh.id
  description       = "${upper(each.key)} to the internet through NAT (packages, pip, git)"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = each.value
  to_port           = each.value
}

# The machines' role exists for EFS's IAM authorization (mount -o iam) and may do nothing else: mount and write
# through the SSH machines' own access points and the datasets one, never as root (no ClientRootAccess), never
# the bare file system. The identity policy names the file system as the resource and the access points in
# the elasticfilesystem:AccessPointArn condition key (Amazon EFS User Guide, "Using access points in IAM
# policies"). Researchers have shells here and can read these credentials from the instance metadata: they
# allow nothing a researcher's own uid on this machine does not already have.
data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "mount" {
  statement {
    sid       = "MountThroughTheirAccessPoints"
    actions   = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    resources = [var.efs_file_system_arn]
    condition {
      test     = "ArnEquals" # the key's type is ARN (Service Authorization Reference, Amazon EFS condition keys)
      variable = "elasticfilesystem:AccessPointArn"
      values   = var.efs_access_point_arns
    }
  }
}

resource "aws_iam_role" "machine" {
  name               = "${var.cluster}-ssh-machines"
  description        = "SSH machines of ${var.cluster}: EFS mounts through their access points only"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "mount" {
  name   = "efs-mount"
  role   = aws_iam_role.machine.id
  policy = data.aws_iam_policy_document.mount.json

  lifecycle {
    precondition {
      # IAM quota: a role's inline policies total at most 10,240 characters (whitespace not counted); each
      # researcher adds two access point ARNs.
      condition     = length(data.aws_iam_policy_document.mount.minified_json) <= 10240
      error_message = "The SSH machines' EFS policy exceeds IAM's 10,240-character inline limit: too many users for one policy."
    }
  }
}

# Session Manager's agent, as on every cluster instance (modules/iam/operator.tf): operators get a shell without
# a key of their own; the actions let the agent register and open its channels, nothing else.
data "aws_iam_policy_document" "session_manager" {
  #checkov:skip=CKV_AWS_111:ssm:UpdateInstanceInformation and the ssmmessages channel actions support no resource-level permissions (Service Authorization Reference).
  #checkov:skip=CKV_AWS_356:Same: these actions take only "*" as the resource.
  statement {
    sid = "SessionManagerAgent"
    actions = [
      "ssm:UpdateInstanceInformation",
      "ssmmessages:CreateControlChannel",
      "ssmmessages:CreateDataChannel",
      "ssmmessages:OpenControlChannel",
      "ssmmessages:OpenDataChannel",
    ]
    resources = ["*"] # these actions support no resource-level permissions
  }
}

resource "aws_iam_role_policy" "session_manager" {
  name   = "session-manager"
  role   = aws_iam_role.machine.id
  policy = data.aws_iam_policy_document.session_manager.json
}

resource "aws_iam_instance_profile" "machine" {
  name = "${var.cluster}-ssh-machines"
  role = aws_iam_role.machine.name
  tags = local.tags
}

# The images are read here, not given as `resolve:ssm:` (which a root_block_device breaks: the provider looks the
# unresolved string up with DescribeImages, InvalidAMIID.Malformed; terraform-provider-aws issue 43488).
data "aws_ssm_parameter" "cpu_ami" {
  count = anytrue([for m in values(local.machines) : !m.gpu]) ? 1 : 0
  name  = var.cpu_ami_ssm_parameter
}

data "aws_ssm_parameter" "gpu_ami" {
  count = var.gpu_ami_id == "" && anytrue([for m in values(local.machines) : m.gpu]) ? 1 : 0
  name  = var.gpu_ami_ssm_parameter
}

locals {
  cpu_ami_id = try(nonsensitive(data.aws_ssm_parameter.cpu_ami[0].value), "")
  gpu_ami_id = var.gpu_ami_id != "" ? var.gpu_ami_id : try(nonsensitive(data.aws_ssm_parameter.gpu_ami[0].value), "")
}

resource "aws_instance" "machine" {
  for_each               = local.machines
  ami                    = each.value.gpu ? local.gpu_ami_id : local.cpu_ami_id
  instance_type          = each.value.instance_type
  subnet_id              = var.subnet_ids[local.zones[each.value.index % length(local.zones)]]
  vpc_security_group_ids = [aws_security_group.ssh.id]
  iam_instance_profile   = aws_iam_instance_profile.machine.name
  monitoring             = true
  ebs_optimized          = true
  # the machine powers itself off when idle (scripts/idle_stop.sh): that stops it, keeping its volume
  instance_initiated_shutdown_behavior = "stop"

  # gzip: EC2 takes at most 16 KB of user data and every researcher adds lines (keys, mounts); cloud-init
  # recognises gzip-compressed user data and decompresses it.
  user_data_base64 = local.user_data

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_size = var.root_volume_gib
    volume_type = "gp3"
    encrypted   = true
    kms_key_id  = var.kms_key_arn
  }

  tags = merge(local.tags, { Name = "${var.cluster}-ssh-${each.key}" })

  lifecycle {
    ignore_changes = [ami]
    precondition {
      # EC2 RunInstances: user data up to 16 KB before base64 (here, after gzip)
      condition     = length(local.user_data) <= ceil(16384 / 3) * 4
      error_message = "The SSH machines' user data exceeds EC2's 16 KB even compressed: too many users or keys."
    }
  }
}

resource "aws_route53_record" "machine" {
  for_each = local.machines
  zone_id  = var.zone_id
  name     = "${each.key}.ssh.${var.domain}"
  type     = "A"
  ttl      = 300
  records  = [aws_instance.machine[each.key].private_ip]
}
