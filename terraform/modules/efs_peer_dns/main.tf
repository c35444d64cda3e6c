# The primary region's EFS file system by its own name from another region's VPC. Amazon's resolver answers
# <fs-id>.efs.<region>.amazonaws.com only inside the file system's VPC (Amazon EFS User Guide, "Mounting EFS file
# systems from another VPC": use a mount target's address, or a Route 53 private hosted zone). A private
# zone of exactly that name, associated with this VPC only, answers it with every zone's mount target address,
# so efs-utils (the EFS CSI driver's mounts) finds the file system by id here as it does in the primary VPC.
# The primary VPC is never associated: there Amazon's own answer (the mount target in the client's zone) stays.
resource "aws_route53_zone" "efs" {
  name          = var.file_system_dns_name
  comment       = "${var.cluster}: the primary region's EFS file system from ${var.region}"
  force_destroy = true

  vpc {
    vpc_id     = var.vpc_id
    vpc_region = var.region
  }

  tags = merge(var.tags, { Name = "${var.cluster}-efs-${var.region}" })
}

resource "aws_route53_record" "efs" {
  #checkov:skip=CKV2_AWS_23:the mount targets are in the primary region's state, not this root's resources
  zone_id = aws_route53_zone.efs.zone_id
  name    = var.file_system_dns_name
  type    = "A"
  ttl     = 300
  records = sort(values(var.mount_target_ips))
}
