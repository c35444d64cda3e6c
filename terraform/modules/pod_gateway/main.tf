# The pod-network gateway: small instances in the primary region that are flannel members (tainted: no job lands
# there), with the source/destination check off. Every given route table sends the pod CIDR to the active
# gateway; a Lambda function (failover/failover.py) moves the routes when it dies. Terraform creates the routes
# once and then leaves their target to the function (ignore_changes).
# The image id is read here, not given as `resolve:ssm:` (which a root_block_device breaks: the provider looks the
# unresolved string up with DescribeImages, InvalidAMIID.Malformed; terraform-provider-aws issue 43488).
data "aws_ssm_parameter" "ami" {
  count = var.ami_id == "" ? 1 : 0
  name  = var.ami_ssm_parameter
}

locals {
  name     = "${var.cluster}-pod-gateway"
  image_id = var.ami_id != "" ? var.ami_id : nonsensitive(data.aws_ssm_parameter.ami[0].value)
  zones    = sort(keys(var.subnet_ids))
  tags     = merge(var.tags, { "research.cluster/cluster" = var.cluster })
}

# The cluster group admits only the cluster's ports; traffic a gateway forwards to pods (a TensorBoard on 6006,
# a notebook, a debugger) may use any port, from the networks outside the overlay.
resource "aws_security_group" "forward" {
  name        = "${local.name}-forward"
  description = "Traffic forwarded into the pod network by the pod gateways"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${local.name}-forward" })
}

resource "aws_vpc_security_group_ingress_rule" "forward" {
  for_each          = toset(var.client_cidrs)
  security_group_id = aws_security_group.forward.id
  description       = "Any port to pods, from ${each.value}"
  cidr_ipv4         = each.value
  ip_protocol       = "-1"
}

# The join as a systemd unit that retries until it succeeds (modules/node_join), after the forwarding and NAT.
module "join" {
  source               = "../node_join"
  join_region          = var.region
  join_token_parameter = var.join_token_parameter
  node_keys_bucket     = var.node_keys_bucket
  ca_hash_parameter    = var.ca_hash_parameter
  api_endpoint         = var.api_endpoint
  node_labels          = "research.cluster/role=pod-gateway"
  taints               = "research.cluster/pod-gateway=true:NoSchedule"
  kubelet_reserved     = var.kubelet_reserved
  prelude = templatefile("${path.module}/templates/gateway.sh.tftpl", {
    pod_cidr          = var.pod_cidr
    masquerade_cidrs  = var.client_cidrs
    gateway_namespace = "pod-gateway"                                 # provision/tenancy.py GATEWAY_NAMESPACE
    identity_selector = "app.kubernetes.io/name=pod-gateway-identity" # provision/tenancy.py GATEWAY_IDENTITY_LABELS
  })
}

resource "aws_instance" "gateway" {
  count                  = var.instance_count
  ami                    = local.image_id
  instance_type          = var.instance_type
  subnet_id              = var.subnet_ids[local.zones[count.index % length(local.zones)]]
  vpc_security_group_ids = concat(var.security_group_ids, [aws_security_group.forward.id])
  iam_instance_profile   = var.instance_profile_name
  source_dest_check      = false
  monitoring             = true
  ebs_optimized          = true

  user_data = module.join.user_data

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

  tags = merge(local.tags, {
    Name                           = "${local.name}-${count.index}"
    "research.cluster/pod-gateway" = var.cluster
  })

  lifecycle {
    ignore_changes = [ami, user_data]
  }
}

resource "aws_route" "pods" {
  for_each               = var.route_table_ids
  route_table_id         = each.value
  destination_cidr_block = var.pod_cidr
  network_interface_id   = aws_instance.gateway[0].primary_network_interface_id

  lifecycle {
    ignore_changes = [network_interface_id] # the failover function owns the target
  }
}

# --- failover ---------------------------------------------------------------------------------------------
# The function's zip (failover/failover.py alone) is written by `invoke render` next to the root
# (provision/terraform/render.py): no archive provider, so the AWS provider is the only one a site mirrors.

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

resource "aws_cloudwatch_log_group" "failover" {
  name              = "/${var.cluster}/${var.region}/pod-gateway-failover"
  retention_in_days = 365
  kms_key_id        = var.kms_key_arn
  tags              = local.tags
}

resource "aws_iam_role" "failover" {
  name = "${local.name}-failover"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
  tags = local.tags
}

# What failover.py calls, and nothing else (`invoke check-terraform` evaluates this policy against the function's
# calls, provision/terraform/data/api_calls.yaml).
data "aws_iam_policy_document" "failover" {
  #checkov:skip=CKV_AWS_111:the Describe calls support no resource-level permissions
  #checkov:skip=CKV_AWS_356:the Describe calls support no resource-level permissions
  statement {
    sid       = "Look"
    actions   = ["ec2:DescribeInstances", "ec2:DescribeInstanceStatus", "ec2:DescribeRouteTables"]
    resources = ["*"] # Describe calls support no resource-level permissions
  }

  statement {
    sid     = "MoveThePodRoute"
    actions = ["ec2:ReplaceRoute", "ec2:CreateRoute"]
    resources = [
      for id in values(var.route_table_ids) :
      "arn:${data.aws_partition.current.partition}:ec2:${var.region}:${data.aws_caller_identity.current.account_id}:route-table/${id}"
    ]
  }

  statement {
    sid       = "Log"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.failover.arn}:*"]
  }
}

resource "aws_iam_role_policy" "failover" {
  name   = "routes"
  role   = aws_iam_role.failover.id
  policy = data.aws_iam_policy_document.failover.json
}

resource "aws_lambda_function" "failover" {
  #checkov:skip=CKV_AWS_116:a failed run needs no dead-letter queue: the schedule runs it again within a minute
  #checkov:skip=CKV_AWS_117:it calls only the EC2 API; outside a VPC it needs no NAT or interface endpoint to do so
  #checkov:skip=CKV_AWS_272:the code is one file from this repository, zipped by Terraform; no signing profile
  #checkov:skip=CKV_AWS_50:X-Ray tracing of a one-call function adds cost and permissions and shows nothing new
  #checkov:skip=CKV_AWS_115:no reserved concurrency: a new account may have no room for it (Lambda keeps 100 unreserved; `invoke check-terraform` refuses it); overlapping runs agree (failover.py, decide)
  function_name    = "${local.name}-failover"
  description      = "Moves the pod-network routes to a healthy pod gateway"
  role             = aws_iam_role.failover.arn
  runtime          = "python3.12"
  handler          = "failover.handler"
  filename         = var.failover_zip
  source_code_hash = filebase64sha256(var.failover_zip)
  timeout          = 30
  memory_size      = 128

  # No reserved concurrency (a new account's quota may leave no room for it: `invoke check-terraform`). Overlapping
  # runs agree: each keeps the gateway most tables point to while it is healthy, else the healthy one with the
  # lowest id (failover.py, decide), so two runs move the routes to the same gateway.
  kms_key_arn = var.kms_key_arn

  # Its log group is named under /<cluster>/, where the cluster key's policy admits CloudWatch Logs (modules/kms).
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.failover.name
  }

  environment {
    variables = {
      CLUSTER         = var.cluster
      POD_CIDR        = var.pod_cidr
      ROUTE_TABLE_IDS = join(",", values(var.route_table_ids))
    }
  }

  tags       = local.tags
  depends_on = [aws_cloudwatch_log_group.failover] # created first with its KMS key
}

resource "aws_cloudwatch_event_rule" "schedule" {
  name                = "${local.name}-check"
  description         = "Check the pod gateways and keep the routes on a healthy one"
  schedule_expression = var.failover_schedule
  tags                = local.tags
}

resource "aws_cloudwatch_event_rule" "state_change" {
  name        = "${local.name}-state-change"
  description = "A pod gateway is stopping or terminating: fail over at once"
  event_pattern = jsonencode({
    source      = ["aws.ec2"]
    detail-type = ["EC2 Instance State-change Notification"]
    detail = {
      instance-id = aws_instance.gateway[*].id
      state       = ["stopping", "stopped", "shutting-down", "terminated"]
    }
  })
  tags = local.tags
}

resource "aws_cloudwatch_event_target" "failover" {
  for_each = {
    schedule     = aws_cloudwatch_event_rule.schedule.name
    state_change = aws_cloudwatch_event_rule.state_change.name
  }
  rule = each.value
  arn  = aws_lambda_function.failover.arn
}

resource "aws_lambda_permission" "events" {
  for_each = {
    schedule     = aws_cloudwatch_event_rule.schedule.arn
    state_change = aws_cloudwatch_event_rule.state_change.arn
  }
  statement_id  = "events-${each.key}"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.failover.function_name
  principal     = "events.amazonaws.com"
  source_arn    = each.value
}
