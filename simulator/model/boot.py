"""Every delay of a node's life in the model, in one place, each with the real system it comes from.

Model seconds (the local stack's node agent, localcluster/nodes.py, divides them by its compression). A node's life::

    launch --INSTANCE_RUNNING_S--> EC2 running --boot_delay(type)--> kubelet registers the Node
        NotReady (Ready=False, KubeletNotReady), tainted node.kubernetes.io/not-ready:NoSchedule
        (+ node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule where a cloud controller runs)
    --cloud_init_s--> the cloud controller initialises it: the uninitialized taint goes
    --ready_s--> kubelet posts Ready=True (the network plugin is up); the not-ready taint goes
    --device_plugin_s--> the device plugin pod runs and has registered: nvidia.com/gpu, vpc.amazonaws.com/efa
        appear in capacity and allocatable
    ... the kubelet stops posting status --monitor_grace_s--> Ready=Unknown, node.kubernetes.io/unreachable
        NoSchedule + NoExecute; pods evicted after their tolerationSeconds (DefaultTolerationSeconds: 300)

Sources:

- ``INSTANCE_RUNNING_S``: EC2 ``pending`` -> ``running`` takes tens of seconds (EC2 User Guide, "Instance
  state changes"); Auto Scaling then marks the instance InService.
- ``DEFAULT_BOOT_DELAYS`` (launch to kubelet registration): an EKS-optimized CPU node joins in 45 to 90 s
  (Karpenter/EKS scaling guides: "an additional 45-90 seconds when new node provisioning is required"); GPU
  AMIs load the NVIDIA kernel modules and, on p4d/p5, the EFA driver, and pull larger images, which takes
  minutes. The per-family GPU figures are our estimates within cluster-autoscaler's 15-minute
  ``--max-node-provision-time`` (FAQ, "What are the parameters to CA?"), not measured on this cluster.
- ``not-ready`` taint at registration: the API server's ``TaintNodesByCondition`` admission plugin
  (kubernetes plugin/pkg/admission/nodetaint/admission.go) adds ``node.kubernetes.io/not-ready:NoSchedule`` to
  every Node created; the node lifecycle controller removes it when Ready=True (pkg/controller/nodelifecycle,
  ``doNoScheduleTaintingPass``, run from the node informer's update queue: within a second).
- ``uninitialized`` taint: a kubelet with ``--cloud-provider=external`` registers with
  ``node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule`` (pkg/kubelet/kubelet_node_status.go);
  the cloud controller manager's node controller removes it once it has read the instance
  (k8s.io/cloud-provider controllers/node/node_controller.go): one DescribeInstances, ``cloud_init_s`` 2 s.
- ``ready_s`` 20 s: a registered kubelet reports ``Ready=False`` "container runtime network not ready:
  NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not
  initialized" until the CNI DaemonSet (aws-node: ipamd attaches the first ENI and its warm IPs) has written
  its configuration; it posts Ready on its next status update (``nodeStatusUpdateFrequency`` 10 s).
- ``device_plugin_s`` 30 s: the device plugin is a DaemonSet pod; once the node's network is ready its image is
  pulled and started, it registers with the kubelet on ``/var/lib/kubelet/device-plugins/kubelet.sock``
  (Kubernetes docs, "Device Plugins") and the kubelet reports the devices in capacity/allocatable on its next
  node status update (up to 10 s). Until then the node has no ``nvidia.com/gpu`` at all.
- ``status_update_s`` 10 s: kubelet ``nodeStatusUpdateFrequency`` default (KubeletConfiguration v1beta1).
- ``monitor_grace_s`` 50 s: kube-controller-manager ``--node-monitor-grace-period``, 40 s before Kubernetes
  1.32, 50 s since (kubernetes/kubernetes#126287); ``monitor_period_s`` 5 s ``--node-monitor-period``.
- ``toleration_s`` 300 s: the ``DefaultTolerationSeconds`` admission plugin gives every pod that does not
  tolerate them ``node.kubernetes.io/not-ready`` and ``node.kubernetes.io/unreachable`` NoExecute tolerations
  with ``tolerationSeconds: 300`` (kube-apiserver ``--default-not-ready-toleration-seconds``,
  ``--default-unreachable-toleration-seconds``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

DEFAULT_BOOT_DELAYS: dict[str, float] = {
    "p2": 240.0,
    "p3": 270.0,
    "p3dn": 300.0,
    "p4d": 330.0,
    "p5": 360.0,
    "g4dn": 180.0,
    "g5": 180.0,
    "g6": 180.0,
    "default": 90.0,  # CPU families
}
INSTANCE_RUNNING_S = 40.0  # EC2 state pending -> running; the node registers later, at the boot delay


def boot_delay(instance_type: str, delays: dict[str, float] | None = None) -> float:
    """Seconds from launch until the kubelet registers the Node (NotReady)."""
    table = {**DEFAULT_BOOT_DELAYS, **(delays or {})}
    family = instance_type.split(".", 1)[0]
    if instance_type in table:
        return float(table[instance_type])
    return float(table.get(family, table["default"]))


@dataclass(frozen=True)
class NodeLifecycle:
    """What happens to a registered node, and when (model seconds; sources in the module docstring)."""

    cloud_controller: bool = True  # AWS nodes: registered with the uninitialized taint until initialised
    cloud_init_s: float = 2.0  # registration -> the cloud controller removes the uninitialized taint
    ready_s: float = 20.0  # registration -> Ready=True and the not-ready taint removed
    device_plugin_s: float = 30.0  # the device plugin pod starts -> its resources are advertised
    device_plugins: bool = True  # the model runs the NVIDIA and EFA device plugin DaemonSets
    status_update_s: float = 10.0  # kubelet nodeStatusUpdateFrequency
    monitor_period_s: float = 5.0  # --node-monitor-period
    monitor_grace_s: float = 50.0  # --node-monitor-grace-period (1.32+)
    toleration_s: int = 300  # DefaultTolerationSeconds for not-ready / unreachable NoExecute

    @classmethod
    def instant(cls) -> NodeLifecycle:
        """Every stage at the registration instant, no device plugin DaemonSets: a node is Ready, untainted
        and advertises its GPUs from the moment it registers (the model before issue 17; for comparisons)."""
        return replace(cls(), cloud_init_s=0.0, ready_s=0.0, device_plugin_s=0.0, device_plugins=False)
