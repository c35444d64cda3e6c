# EFS for home directories and datasets: encrypted, backed up, a mount target in every private subnet, and NFS
# only from the cluster's networks.
locals {
  name = "${var.cluster}-${var.region}"
}

resource "aws_efs_file_system" "this" {
  creation_token  = local.name
  encrypted       = true
  kms_key_id      = var.kms_key_arn
  throughput_mode = var.throughput_mode

  lifecycle_policy {
    transition_to_ia = "AFTER_30_DAYS"
  }

  tags = { Name = local.name }
}

resource "aws_efs_backup_policy" "this" {
  file_system_id = aws_efs_file_system.this.id

  backup_policy {
    status = "ENABLED"
  }
}

resource "aws_security_group" "nfs" {
  name        = "${local.name}-efs"
  description = "EFS mount targets: NFS from the cluster's networks"
  vpc_id      = var.vpc_id
  tags        = { Name = "${local.name}-efs" }
}

resource "aws_vpc_security_group_ingress_rule" "nfs" {
  for_each          = toset(var.client_cidrs)
  security_group_id = aws_security_group.nfs.id
  description       = "NFS from ${each.value}"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 2049
  to_port           = 2049
}

resource "aws_efs_mount_target" "this" {
  for_each        = var.subnet_ids
  file_system_id  = aws_efs_file_system.this.id
  subnet_id       = each.value
  security_groups = [aws_security_group.nfs.id]
}
