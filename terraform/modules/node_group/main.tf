# One spec node group: a launch template (baked AMI, IMDSv2 only, encrypted root volume, user data that joins
# the cluster with the group's labels and taints) and an Auto Scaling group over the private subnets, tagged for
# autoscaler discovery and scale-from-zero. Terraform sets min/max; the autoscaler owns desired capacity.
module "node_template" {
  source   = "../node_template"
  cluster  = var.cluster
  asg_name = var.name
  labels   = var.labels
  taints   = var.taints
  gpus     = var.gpus
  priority = var.priority

  efa_interfaces = var.efa_interfaces
}

locals {
  image_id = var.ami_id != "" ? var.ami_id : "resolve:ssm:${var.ami_ssm_parameter}"
}

# The join as a systemd unit that retries until it succeeds, with the instance's providerID and the kubelet's
# reservations for its type (modules/node_join).
module "join" {
  source               = "../node_join"
  join_region          = var.join_region
  join_token_parameter = var.join_token_parameter
  node_keys_bucket     = var.node_keys_bucket
  ca_hash_parameter    = var.ca_hash_parameter
  api_endpoint         = var.api_endpoint
  node_labels          = module.node_template.kubelet_node_labels
  taints               = module.node_template.kubelet_taints
  kubelet_reserved     = var.kubelet_reserved
}

# EFA where the instance type has it (clusterspec/data/instance_types.yaml, efa): one EFA interface per network
# card, a cluster placement group (one zone) and a group admitting all traffic from itself (Amazon EC2 User
# Guide, "Get started with EFA": "Prepare an EFA-enabled security group" - all inbound and outbound traffic to
# and from the security group itself; "Launch instances into a cluster placement group").
locals {
  efa = var.efa_interfaces > 0
}

# The one zone of an EFA group: the first of the VPC's zones where EC2 offers every instance type of the group
# (DescribeInstanceTypeOfferings; issue 36), never the zone whose letter sorts first: p4d and p5 are offered in
# some zones of a region only, and a placement group in a zone without them launches nothing.
# `invoke preflight` makes the same call before the apply.
data "aws_ec2_instance_type_offerings" "efa" {
  count         = local.efa ? 1 : 0
  location_type = "availability-zone"

  filter {
    name   = "instance-type"
    values = var.instance_types
  }

  filter {
    name   = "location"
    values = keys(var.subnet_ids_by_zone)
  }
}

locals {
  efa_zones = local.efa ? [
    for z in sort(keys(var.subnet_ids_by_zone)) : z
    if length(toset([
      for i, t in data.aws_ec2_instance_type_offerings.efa[0].instance_types : t
      if data.aws_ec2_instance_type_offerings.efa[0].locations[i] == z
    ])) == length(toset(var.instance_types))
  ] : []
  efa_subnet_ids = length(local.efa_zones) > 0 ? [var.subnet_ids_by_zone[local.efa_zones[0]]] : []
}

resource "aws_placement_group" "efa" {
  count    = local.efa ? 1 : 0
  name     = var.name
  strategy = "cluster"
}

resource "aws_security_group" "efa" {
  #checkov:skip=CKV2_AWS_5:Attached to the EFA interfaces of the launch template below.
  count       = local.efa ? 1 : 0
  name        = "${var.name}-efa"
  description = "EFA traffic between the nodes of ${var.name}"
  vpc_id      = var.vpc_id
  tags        = { Name = "${var.name}-efa" }
}

resource "aws_vpc_security_group_ingress_rule" "efa" {
  count                        = local.efa ? 1 : 0
  security_group_id            = aws_security_group.efa[0].id
  description                  = "All traffic from the group itself (EFA)"
  referenced_security_group_id = aws_security_group.efa[0].id
  ip_protocol                  = "-1"
}

resource "aws_vpc_security_group_egress_rule" "efa" {
  count                        = local.efa ? 1 : 0
  security_group_id            = aws_security_group.efa[0].id
  description                  = "All traffic to the group itself (EFA)"
  referenced_security_group_id = aws_security_group.efa[0].id
  ip_protocol                  = "-1"
}

resource "aws_launch_template" "this" {
  name          = var.name
  description   = "Nodes of ${var.name}"
  image_id      = local.image_id
  instance_type = var.instance_types[0]
  # with EFA the groups go on the interfaces (a template may not set both)
  vpc_security_group_ids = local.efa ? null : var.security_group_ids
  user_data              = base64encode(module.join.user_data)
  update_default_version = true
  ebs_optimized          = true

  iam_instance_profile {
    name = var.instance_profile_name
  }

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
    instance_metadata_tags      = "disabled"
  }

  monitoring {
    enabled = true
  }

  dynamic "network_interfaces" {
    for_each = range(var.efa_interfaces)
    content {
      network_card_index    = network_interfaces.value
      device_index          = network_interfaces.value == 0 ? 0 : 1
      interface_type        = "efa"
      security_groups       = concat(var.security_group_ids, [aws_security_group.efa[0].id])
      delete_on_termination = true
    }
  }

  block_device_mappings {
    device_name = "/dev/sda1"
    ebs {
      volume_size           = var.root_volume_gib
      volume_type           = "gp3"
      encrypted             = true
      kms_key_id            = var.kms_key_arn
      delete_on_termination = true
    }
  }

  tag_specifications {
    resource_type = "instance"
    tags          = { Name = var.name, "research.cluster/node-group" = var.name }
  }

  tag_specifications {
    resource_type = "volume"
    tags          = { Name = var.name, "research.cluster/node-group" = var.name }
  }
}

resource "aws_autoscaling_group" "this" {
  name             = var.name
  min_size         = var.min_size
  max_size         = var.max_size
  desired_capacity = var.min_size
  # a cluster placement group lives in one zone: an EFA group launches in the zone that offers its types
  vpc_zone_identifier       = local.efa ? local.efa_subnet_ids : var.subnet_ids
  placement_group           = local.efa ? aws_placement_group.efa[0].id : null
  health_check_type         = "EC2"
  health_check_grace_period = 300
  capacity_rebalance        = var.spot
  # AZRebalance would terminate running training jobs to even out zones; the autoscaler decides instead.
  suspended_processes = ["AZRebalance"]
  # The last line against killing a job: no lowering of desired capacity (a deposed autoscaler's late write, a
  # person, the planner after a failure) may let AWS choose an instance. The autoscaler removes exactly the
  # instance it proved empty with TerminateInstanceInAutoScalingGroup, which protection does not block.
  protect_from_scale_in = true

  dynamic "launch_template" {
    for_each = var.spot ? [] : [1]
    content {
      id      = aws_launch_template.this.id
      version = aws_launch_template.this.latest_version
    }
  }

  dynamic "mixed_instances_policy" {
    for_each = var.spot ? [1] : []
    content {
      instances_distribution {
        on_demand_base_capacity                  = 0
        on_demand_percentage_above_base_capacity = 0
        spot_allocation_strategy                 = "price-capacity-optimized"
      }

      launch_template {
        launch_template_specification {
          launch_template_id = aws_launch_template.this.id
          version            = aws_launch_template.this.latest_version
        }

        dynamic "override" {
          for_each = var.instance_types
          content {
            instance_type = override.value
          }
        }
      }
    }
  }

  tag {
    key                 = "Name"
    value               = var.name
    propagate_at_launch = true
  }

  dynamic "tag" {
    for_each = module.node_template.asg_tags
    content {
      key                 = tag.key
      value               = tag.value
      propagate_at_launch = false
    }
  }

  lifecycle {
    # The autoscaler owns desired capacity; Terraform must never fight it.
    ignore_changes = [desired_capacity]
    precondition {
      condition     = !local.efa || length(local.efa_subnet_ids) == 1
      error_message = "No zone of the VPC offers every instance type of this EFA group (DescribeInstanceTypeOfferings): add a zone that does to the region's zones in cluster.yaml."
    }
  }
}
