# S3 gateway endpoint: dataset and result traffic to S3 in this region stays off the NAT gateways (no NAT data
# processing charge, no NAT bandwidth limit). Gateway endpoints add the S3 prefix list to the route tables; a
# route to a prefix list wins over the 0.0.0.0/0 NAT route. Buckets in other regions still go through NAT.
resource "aws_vpc_endpoint" "s3" {
  vpc_id            = aws_vpc.this.id
  service_name      = "com.amazonaws.${var.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = concat([for zone in var.zones : aws_route_table.private[zone].id], [aws_route_table.public.id])
  tags              = { Name = "${local.name}-s3" }
}
