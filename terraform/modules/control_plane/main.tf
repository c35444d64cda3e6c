# A highly available kubeadm control plane: instances spread over the zones behind an internal network load
# balancer (API server, 6443). Member 0 runs `kubeadm init` once (while the init parameter says "pending") and
# writes the join token, the CA hash and the certificate key to SSM SecureStrings; the others (and a replaced
# member 0) join as control-plane members with back-off, after removing etcd members whose instances are gone.
# Each member reports its bootstrap state to <status_prefix>/member-<i> (`invoke control-plane-status`); every
# member renews the join token so workers can join whenever the autoscaler adds them.
data "aws_ssm_parameter" "ami" {
  count = var.ami_id == "" ? 1 : 0
  name  = var.ami_ssm_parameter
}

locals {
  # a whole-line comment of the scripts ("#" alone or "# " and text), not "#!" nor "# shellcheck ..."
  comment_lines = "/(?m)^[ \\t]*#(?:[ \\t]+[^s \\t].*)?\\n/"
  name          = "${var.cluster}-control-plane"
  zones         = sort(keys(var.subnet_ids))
  ami_id        = var.ami_id != "" ? var.ami_id : nonsensitive(data.aws_ssm_parameter.ami[0].value)
  endpoint      = "${var.api_dns_name}:6443"
  # Written by the members only (IAM: modules/iam/control_plane.tf); read by `invoke control-plane-status`.
  status_prefix = "/${var.cluster}/control-plane/status"
}

# "pending" while the cluster has never been initialised; member 0 sets "initialized by <instance> at <time>".
# Created with the control plane and destroyed with it, so a rebuilt cluster initialises again and a replaced
# member 0 joins the running one instead.
resource "aws_ssm_parameter" "init" {
  #checkov:skip=CKV2_AWS_34:Holds "pending" or "initialized by <instance> at <time>", no secret; the members' role may write only this name.
  name        = "/${var.cluster}/control-plane/init"
  description = "kubeadm init state of the control plane of ${var.cluster} (pending or initialized)"
  type        = "String"
  value       = "pending"

  lifecycle {
    ignore_changes = [value]
  }
}

resource "aws_lb" "api" {
  #checkov:skip=CKV_AWS_91:NLB access logs exist only for TLS listeners; the API listener is TCP passthrough (the API server terminates TLS).
  #checkov:skip=CKV_AWS_150:Deletion protection would block `invoke down`, which already asks for confirmation.
  name                             = "${var.cluster}-api"
  internal                         = true
  load_balancer_type               = "network"
  subnets                          = [for z in local.zones : var.subnet_ids[z]]
  security_groups                  = [var.security_group_id]
  enable_cross_zone_load_balancing = true
  enable_deletion_protection       = false
}

resource "aws_lb_target_group" "api" {
  name        = "${var.cluster}-api"
  port        = 6443
  protocol    = "TCP"
  vpc_id      = var.vpc_id
  target_type = "ip" # ip targets do not hairpin: a member may reach the API through the balancer itself

  health_check {
    protocol = "HTTPS"
    port     = "6443"
    path     = "/readyz"
  }
}

resource "aws_lb_listener" "api" {
  load_balancer_arn = aws_lb.api.arn
  port              = 6443
  protocol          = "TCP"

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.api.arn
  }
}

resource "aws_instance" "member" {
  count                  = var.instance_count
  ami                    = local.ami_id
  instance_type          = var.instance_type
  subnet_id              = var.subnet_ids[local.zones[count.index % length(local.zones)]]
  vpc_security_group_ids = [var.security_group_id, var.etcd_security_group_id]
  iam_instance_profile   = var.instance_profile_name
  ebs_optimized          = true
  monitoring             = true
  # gzip: the script with the scheduler profile is over EC2's 16 KiB user-data limit; cloud-init unpacks it. The
  # bootstrap's whole-line comments stay in the repository, not in the user data (shellcheck directives stay).
  user_data_base64 = base64gzip(templatefile("${path.module}/templates/control_plane.sh.tftpl", {
    cluster                = var.cluster
    index                  = count.index
    region                 = var.region
    endpoint               = local.endpoint
    api_host               = var.api_dns_name
    lb_dns_name            = aws_lb.api.dns_name
    kubernetes_version     = var.kubernetes_version
    pod_cidr               = var.pod_cidr
    service_cidr           = var.service_cidr
    join_prefix            = var.join_parameter_prefix
    status_prefix          = local.status_prefix
    init_parameter         = aws_ssm_parameter.init.name
    kms_key_arn            = var.kms_key_arn
    flannel_manifest       = var.flannel_manifest
    scheduler_config       = var.scheduler_config
    scheduler_file         = var.scheduler_config_file
    scheduler_kubeadm      = var.scheduler_kubeadm
    service_account_issuer = var.service_account_issuer
    target_group_arn       = aws_lb_target_group.api.arn
    bootstrap              = replace(file("${path.module}/scripts/bootstrap.sh"), local.comment_lines, "")
    etcd_script            = file("${path.module}/scripts/etcd.sh")
    etcd_backup            = var.etcd_backup
  }))

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
    # 1: only the host's network namespace reaches IMDS, so no pod can use the control plane's role (the
    # autoscaler runs with hostNetwork).
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_size = 100
    volume_type = "gp3"
    encrypted   = true
    kms_key_id  = var.kms_key_arn
  }

  tags = {
    Name                             = "${local.name}-${count.index}"
    "research.cluster/control-plane" = var.cluster # joining members list live peers by this tag
  }

  lifecycle {
    # A new baked image must not replace etcd members; upgrade them one by one with kubeadm.
    ignore_changes = [ami, user_data_base64]
  }
}

# Member 0 alone is the balancer's target until the others serve: with every target unhealthy an NLB fails open
# and sends connections to all of them (Elastic Load Balancing, Network Load Balancers, "Target group health":
# "if all targets are unhealthy, the load balancer routes requests to all targets"), so while member 0 runs
# kubeadm init, half the attempts would reach members with no API. Every other member registers its own address
# once it has joined (bootstrap.sh, register_target); a replaced member 0 gets this attachment anew.
resource "aws_lb_target_group_attachment" "api" {
  target_group_arn = aws_lb_target_group.api.arn
  target_id        = aws_instance.member[0].private_ip
  port             = 6443
}
