# SSH machines for ad-hoc work: a few GPU and CPU instances in the primary region, homes on EFS, the spec's users
# and keys, reachable over the Client VPN only (their one security group admits port 22 from its pool, nothing else)., with private DNS names <group>-<n>.ssh.<domain>.
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
}

resource "aws_security_group" "ssh" {
  name        = "${var.cluster}-ssh-machines"
  description = "SSH from the Client VPN pool only"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each          = toset(var.client_cidrs)
  security_group_id = aws_security_group.ssh.id
  description       = "SSH from laptops on the Client VPN"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
}

resource "aws_vpc_security_group_egress_rule" "cluster" {
  for_each          = toset(var.cluster_cidrs)
  security_group_id = aws_security_group.ssh.id
  description       = "Everything to the cluster networks (EFS, the API server, jobs) in ${each.value}"
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
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

resource "aws_instance" "machine" {
  #checkov:skip=CKV2_AWS_41:researchers have shells here: no instance role, so no AWS credentials to take from it
  for_each               = local.machines
  ami                    = each.value.gpu ? (var.gpu_ami_id != "" ? var.gpu_ami_id : "resolve:ssm:${var.gpu_ami_ssm_parameter}") : "resolve:ssm:${var.cpu_ami_ssm_parameter}"
  instance_type          = each.value.instance_type
  subnet_id              = var.subnet_ids[local.zones[each.value.index % length(local.zones)]]
  vpc_security_group_ids = [aws_security_group.ssh.id]
  monitoring             = true
  ebs_optimized          = true

  user_data = templatefile("${path.module}/templates/ssh.sh.tftpl", {
    efs_dns_name = var.efs_dns_name
    efs_mount    = var.efs_mount
    users        = var.users
  })

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
