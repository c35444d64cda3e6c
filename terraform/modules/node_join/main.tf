# A cloud node's join, shared by the node groups and the pod gateways: no cloud-init loop that gives up, but a
# systemd unit (cluster-join.service) that runs one attempt at a time and is restarted with back-off (10 s
# doubling to 5 min, for ever: StartLimitIntervalSec=0) until the node is registered. Each attempt reads the
# instance's identity from IMDSv2 (--provider-id=aws:///<zone>/<instance-id>, the zone, region and instance-type
# labels), the kubelet's reservations for its instance type (a kubeadm KubeletConfiguration patch), and the join
# token and CA hash from SSM, then runs `kubeadm join`; a failed attempt is reset before the next. Plain
# templatefile: no provider, no resource.
locals {
  # instance type => the kubeadm patch (kubeletconfiguration+merge.yaml) for it
  patches = { for t, c in var.kubelet_reserved : t => yamlencode(c) }
  join_script = templatefile("${path.module}/templates/cluster-join.sh.tftpl", {
    join_region          = var.join_region
    join_token_parameter = var.join_token_parameter
    node_keys_bucket     = var.node_keys_bucket
    ca_hash_parameter    = var.ca_hash_parameter
    api_endpoint         = var.api_endpoint
    node_labels          = var.node_labels
    taints               = var.taints
    patches              = local.patches
  })
}
