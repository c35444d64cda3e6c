# Cases for the labels, taints and autoscaler tags of a node group.

run "gpu_group_with_taints" {
  command = plan

  variables {
    cluster  = "dlr"
    asg_name = "dlr-us-west-2-gpu-t4"
    labels   = { "research.cluster/pool" = "gpu", "research.cluster/gpu-model" = "t4" }
    taints   = [{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]
    gpus     = 1
    priority = 20
  }

  assert {
    condition     = output.kubelet_node_labels == "research.cluster/gpu-model=t4,research.cluster/node-group=dlr-us-west-2-gpu-t4,research.cluster/pool=gpu"
    error_message = "the kubelet labels must be the group's plus the node-group label"
  }

  assert {
    condition     = output.kubelet_taints == "nvidia.com/gpu=present:NoSchedule"
    error_message = "the kubelet taints must be the group's"
  }

  assert {
    condition = output.asg_tags == {
      "k8s.io/cluster-autoscaler/enabled"                                         = "true"
      "k8s.io/cluster-autoscaler/dlr"                                             = "owned"
      "k8s.io/cluster-autoscaler/node-template/label/research.cluster/pool"       = "gpu"
      "k8s.io/cluster-autoscaler/node-template/label/research.cluster/gpu-model"  = "t4"
      "k8s.io/cluster-autoscaler/node-template/label/research.cluster/node-group" = "dlr-us-west-2-gpu-t4"
      "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"              = "present:NoSchedule"
      "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"          = "1"
      "research.cluster/priority"                                                 = "20"
    }
    error_message = "the ASG must carry the discovery, node-template and priority tags"
  }
}

run "cpu_group_without_taints" {
  command = plan

  variables {
    cluster  = "lab"
    asg_name = "lab-eu-west-1-cpu"
    labels   = {}
    taints   = [{ key = "dedicated", value = "", effect = "NoExecute" }]
    gpus     = 0
    priority = -5
  }

  assert {
    condition     = output.kubelet_node_labels == "research.cluster/node-group=lab-eu-west-1-cpu"
    error_message = "a group without labels still gets the node-group label"
  }

  assert {
    condition     = output.kubelet_taints == "dedicated:NoExecute"
    error_message = "a taint without a value is key:Effect"
  }

  assert {
    condition     = !contains(keys(output.asg_tags), "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu")
    error_message = "a CPU group has no GPU resource tag"
  }

  assert {
    condition     = output.asg_tags["k8s.io/cluster-autoscaler/lab"] == "owned" && output.asg_tags["research.cluster/priority"] == "-5"
    error_message = "discovery and priority tags"
  }
}

run "rejects_a_bad_effect" {
  command = plan

  variables {
    cluster  = "dlr"
    asg_name = "dlr-us-west-2-cpu"
    taints   = [{ key = "a", value = "b", effect = "NoRun" }]
  }

  expect_failures = [var.taints]
}
