# Joins this region's VPC to the private zone the primary region created.
data "aws_route53_zone" "cluster" {
  name         = var.domain
  private_zone = true
  tags         = { "research.cluster/cluster" = var.cluster }
}

resource "aws_route53_zone_association" "this" {
  zone_id    = data.aws_route53_zone.cluster.zone_id
  vpc_id     = var.vpc_id
  vpc_region = var.region
}
