"""Names shared across the parts: tags, labels, annotations, taints, resources, ConfigMaps and the lease.

Terraform (tags, user data), the deployment manifests, the autoscaler's adapters and planner, the cluster model
and ``lab`` all read them from here, so that a value written by one part is the value another part looks for.
"""

from __future__ import annotations

# --- Auto Scaling group tags (Terraform writes them; the AWS adapter and the planner read them) ---------------
CA_ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
CA_CLUSTER_TAG_PREFIX = "k8s.io/cluster-autoscaler/"  # + <cluster name>, value "owned"
NODE_TEMPLATE_LABEL_TAG = "k8s.io/cluster-autoscaler/node-template/label/"  # + label key
NODE_TEMPLATE_TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/"  # + key, value "<value>:<Effect>"
NODE_TEMPLATE_RESOURCE_TAG = (
    "k8s.io/cluster-autoscaler/node-template/resources/"  # + resource, value quantity
)
PRIORITY_TAG = "research.cluster/priority"  # group priority for the planner (int)

# --- node labels and taints ------------------------------------------------------------------------------------
NODE_GROUP_LABEL = "research.cluster/node-group"  # node label naming the group (the ASG name)
SITE_LABEL = "research.cluster/site"  # on the lab's servers: the site's name
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
REGION_KEY = "topology.kubernetes.io/region"
INSTANCE_TYPE_KEY = "node.kubernetes.io/instance-type"
# A cloud node's spec.providerID, set by its own kubelet (--provider-id from IMDSv2 in the join user data: there
# is no cloud controller manager, docs/terraform.md "providerID"); the autoscaler maps a Node to its instance by it.
PROVIDER_ID_FORMAT = "aws:///{zone}/{instance_id}"
SCALE_DOWN_DISABLED_ANNOTATION = "cluster-autoscaler.kubernetes.io/scale-down-disabled"  # on nodes: "true"
# NoSchedule taint set before a node is removed (value: unix seconds): cluster-autoscaler's own key
# (utils/taints/taints.go, ToBeDeletedTaint), which other tools already recognise (the NVIDIA GPU operator, the
# node termination handler, CA-aware controllers). The project's earlier key is still read, so that nodes tainted
# by an older version are finished or released.
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
TO_BE_DELETED_TAINTS = (TO_BE_DELETED_TAINT, "research.cluster/to-be-deleted")
# PreferNoSchedule taint on a busy node launched from an older launch template or image than its group's (value:
# the group's version): kube-scheduler's TaintToleration score (weight 3) sends new pods elsewhere when they fit
# elsewhere, so the node empties as its jobs end and is replaced; nothing is evicted (docs/planner.md, "Drift").
DRIFTED_TAINT = "research.cluster/drifted"

# --- the baked image ---------------------------------------------------------------------------------------------
# The GPU worker image's root volume, hence its root snapshot (packer/gpu-worker.pkr.hcl gets it through the var
# file, provision/packer/variables.py); every instance or launch template booting the image needs at least this
# much (RunInstances refuses a root volume smaller than the snapshot; `invoke check-terraform` checks it).
IMAGE_ROOT_GIB = 40
# Set with the taint when the autoscaler cordons a node it removes (cluster-autoscaler's
# --cordon-node-before-terminating): only a node it cordoned is uncordoned when the removal is called off.
CORDONED_BY_AUTOSCALER_ANNOTATION = "research.cluster/cordoned-by-autoscaler"  # "true"
# When a fresh read called a node's removal off, and the pod that stopped it ("<RFC 3339 time>; <reason>"): the node
# is not tainted again before --unremovable-node-recheck-timeout (cluster-autoscaler's unremovable-node recheck).
SCALE_DOWN_ABORTED_ANNOTATION = "research.cluster/scale-down-aborted"
# On a pod: a longer --new-pod-scale-up-delay for it (a Go duration), cluster-autoscaler's annotation
POD_SCALE_UP_DELAY_ANNOTATION = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay"

# --- extended resources ----------------------------------------------------------------------------------------
GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource
EFA_RESOURCE = "vpc.amazonaws.com/efa"  # the EFA device plugin's resource

# --- pods and Jobs ---------------------------------------------------------------------------------------------
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"  # on pods: "false" protects
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # gang membership (scheduler-plugins)
POD_GROUP_SIZE_ANNOTATION = "research.cluster/pod-group-size"  # gang size for PodGroup-labelled pods
# On a Job's pod template: "true" makes the Job's pods one gang (all-or-nothing, one region). Without it (or the
# PodGroup label) an Indexed Job is a set of independent pods, as the default scheduler treats it.
GANG_ANNOTATION = "research.cluster/gang"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
JOB_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"  # also the annotation of the same name
USER_LABEL = "research.cluster/user"  # a researcher's namespace and the objects `lab` makes for them

# --- the autoscaler's objects in the cluster (its Deployment, RBAC and the live controller agree on them) -------
AUTOSCALER_NAMESPACE = "research-autoscaler"
AUTOSCALER_COMPONENT = "research-autoscaler"  # the Events' source component
STATE_CONFIGMAP = "research-autoscaler-state"
STATUS_CONFIGMAP = "research-autoscaler-status"
LEASE_NAME = "research-autoscaler"  # coordination.k8s.io Lease of the leader election
# The autoscaler's ServiceAccount: its Deployment runs as it, and the IAM role <cluster>-autoscaler trusts exactly
# this subject of the cluster's service-account issuer (IRSA, terraform/modules/iam/autoscaler.tf).
AUTOSCALER_SERVICE_ACCOUNT = "research-autoscaler"
AUTOSCALER_IRSA_SUBJECT = f"system:serviceaccount:{AUTOSCALER_NAMESPACE}:{AUTOSCALER_SERVICE_ACCOUNT}"
IRSA_AUDIENCE = "sts.amazonaws.com"  # the projected token's audience; the IAM OIDC provider's client id
# Where the projected token is mounted (the path the pod identity webhook uses, so tools find it the same way).
IRSA_TOKEN_DIR = "/var/run/secrets/eks.amazonaws.com/serviceaccount"

# --- what a job asks per GPU when it says nothing else ------------------------------------------------------------
# The share of the smallest GPU node (g4dn.xlarge: 4 vCPUs, 16 GiB for 1 GPU) left after the kubelet's
# reservations and a DaemonSet's room, so a pod never needs more CPU or memory per GPU than any GPU node offers:
# what `lab` requests per GPU, and what the simulator gives trace jobs that record no CPU or memory.
CPU_PER_GPU = 3
MEMORY_GIB_PER_GPU = 12

# --- monitoring (issue 29, docs/operations.md): Prometheus and Alertmanager deployed with the cluster -------------
MONITORING_NAMESPACE = "monitoring"
ALERTMANAGER_SERVICE_ACCOUNT = (
    "alertmanager"  # its IAM role (terraform/modules/alert_topic) trusts exactly this
)
