# The address plan of one VPC, identical to clusterspec/addresses.py:
#   private subnet of zone i = cidrsubnet(vpc, 3, i)                      (a /19 of a /16)
#   public subnet of zone i  = cidrsubnet(cidrsubnet(vpc, 3, 7), 3, i)    (a /22 of a /16)
locals {
  private_newbits = 3
  public_newbits  = 3
  public_block    = cidrsubnet(var.vpc_cidr, local.private_newbits, pow(2, local.private_newbits) - 1)

  private = { for i, zone in var.zones : zone => cidrsubnet(var.vpc_cidr, local.private_newbits, i) }
  public  = { for i, zone in var.zones : zone => cidrsubnet(local.public_block, local.public_newbits, i) }
}
