# Cross-region VPC peering between this region and one applied before it: the request from here, the
# acceptance in the peer region, and routes for each other's CIDR in both sides' private route tables.
# Pod traffic needs no routes of its own: flannel VXLAN carries it between node addresses.
data "aws_vpc" "peer" {
  provider   = aws.peer
  cidr_block = var.peer_vpc_cidr
  tags       = { Name = "${var.cluster}-${var.peer_region}" }
}

data "aws_route_tables" "peer_private" {
  provider = aws.peer
  vpc_id   = data.aws_vpc.peer.id
  tags     = { "research.cluster/tier" = "private" }
}

resource "aws_vpc_peering_connection" "this" {
  vpc_id      = var.vpc_id
  peer_vpc_id = data.aws_vpc.peer.id
  peer_region = var.peer_region
  auto_accept = false
  tags        = { Name = "${var.cluster}-${var.region}-to-${var.peer_region}" }
}

resource "aws_vpc_peering_connection_accepter" "this" {
  provider                  = aws.peer
  vpc_peering_connection_id = aws_vpc_peering_connection.this.id
  auto_accept               = true
  tags                      = { Name = "${var.cluster}-${var.peer_region}-from-${var.region}" }
}

resource "aws_route" "to_peer" {
  for_each                  = var.route_table_ids
  route_table_id            = each.value
  destination_cidr_block    = var.peer_vpc_cidr
  vpc_peering_connection_id = aws_vpc_peering_connection_accepter.this.id
}

resource "aws_route" "from_peer" {
  provider                  = aws.peer
  for_each                  = toset(data.aws_route_tables.peer_private.ids)
  route_table_id            = each.value
  destination_cidr_block    = var.vpc_cidr
  vpc_peering_connection_id = aws_vpc_peering_connection_accepter.this.id
}
