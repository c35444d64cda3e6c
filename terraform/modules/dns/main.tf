# The cluster's private zone: api.<domain> for the API server and an A record per physical server (the SSH
# nodes). Created with the primary VPC; the other regions' VPCs join through dns_association.
resource "aws_route53_zone" "this" {
  #checkov:skip=CKV2_AWS_38:DNSSEC signing is not available for private hosted zones.
  #checkov:skip=CKV2_AWS_39:Query logging is not available for private hosted zones (Resolver query logs cover VPCs).
  name    = var.domain
  comment = "Private zone of the ${var.cluster} research cluster"

  vpc {
    vpc_id     = var.vpc_id
    vpc_region = var.region
  }

  lifecycle {
    # Other regions add their VPCs with aws_route53_zone_association.
    ignore_changes = [vpc]
  }
}

resource "aws_route53_record" "api" {
  zone_id = aws_route53_zone.this.zone_id
  name    = "api.${var.domain}"
  type    = "A"

  alias {
    name                   = var.api_lb_dns_name
    zone_id                = var.api_lb_zone_id
    evaluate_target_health = true
  }
}

resource "aws_route53_record" "host" {
  #checkov:skip=CKV2_AWS_23:These name the physical servers at the sites, which are not AWS resources.
  for_each = var.hosts
  zone_id  = aws_route53_zone.this.zone_id
  name     = "${each.key}.${var.domain}"
  type     = "A"
  ttl      = 300
  records  = [each.value]
}
