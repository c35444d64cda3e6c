# Cases for the address plan; tests/provision/terraform/test_addressing.py checks that every expected value here
# is also what clusterspec/addresses.py computes, so the Python and Terraform sides cannot drift apart.

run "three_zones_in_a_16" {
  command = plan

  variables {
    vpc_cidr = "10.0.0.0/16"
    zones    = ["us-west-2a", "us-west-2b", "us-west-2c"]
  }

  assert {
    condition = output.private_subnets == {
      "us-west-2a" = "10.0.0.0/19"
      "us-west-2b" = "10.0.32.0/19"
      "us-west-2c" = "10.0.64.0/19"
    }
    error_message = "private subnets must be cidrsubnet(vpc, 3, i)"
  }

  assert {
    condition = output.public_subnets == {
      "us-west-2a" = "10.0.224.0/22"
      "us-west-2b" = "10.0.228.0/22"
      "us-west-2c" = "10.0.232.0/22"
    }
    error_message = "public subnets must be cidrsubnet(cidrsubnet(vpc, 3, 7), 3, i)"
  }
}

run "four_zones_in_a_16" {
  command = plan

  variables {
    vpc_cidr = "10.1.0.0/16"
    zones    = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]
  }

  assert {
    condition = output.private_subnets == {
      "us-east-1a" = "10.1.0.0/19"
      "us-east-1b" = "10.1.32.0/19"
      "us-east-1c" = "10.1.64.0/19"
      "us-east-1d" = "10.1.96.0/19"
    }
    error_message = "private subnets must be cidrsubnet(vpc, 3, i)"
  }

  assert {
    condition = output.public_subnets == {
      "us-east-1a" = "10.1.224.0/22"
      "us-east-1b" = "10.1.228.0/22"
      "us-east-1c" = "10.1.232.0/22"
      "us-east-1d" = "10.1.236.0/22"
    }
    error_message = "public subnets must be cidrsubnet(cidrsubnet(vpc, 3, 7), 3, i)"
  }
}

run "seven_zones_in_a_24" {
  command = plan

  variables {
    vpc_cidr = "192.168.7.0/24"
    zones    = ["z-a", "z-b", "z-c", "z-d", "z-e", "z-f", "z-g"]
  }

  assert {
    condition = output.private_subnets == {
      "z-a" = "192.168.7.0/27"
      "z-b" = "192.168.7.32/27"
      "z-c" = "192.168.7.64/27"
      "z-d" = "192.168.7.96/27"
      "z-e" = "192.168.7.128/27"
      "z-f" = "192.168.7.160/27"
      "z-g" = "192.168.7.192/27"
    }
    error_message = "private subnets must be cidrsubnet(vpc, 3, i)"
  }

  assert {
    condition = output.public_subnets == {
      "z-a" = "192.168.7.224/30"
      "z-b" = "192.168.7.228/30"
      "z-c" = "192.168.7.232/30"
      "z-d" = "192.168.7.236/30"
      "z-e" = "192.168.7.240/30"
      "z-f" = "192.168.7.244/30"
      "z-g" = "192.168.7.248/30"
    }
    error_message = "public subnets must be cidrsubnet(cidrsubnet(vpc, 3, 7), 3, i)"
  }
}

run "rejects_eight_zones" {
  command = plan

  variables {
    vpc_cidr = "10.0.0.0/16"
    zones    = ["a", "b", "c", "d", "e", "f", "g", "h"]
  }

  expect_failures = [var.zones]
}

run "rejects_a_vpc_larger_than_16" {
  command = plan

  variables {
    vpc_cidr = "10.0.0.0/8"
    zones    = ["a"]
  }

  expect_failures = [var.vpc_cidr]
}
