"""Names the planner reads and writes on Kubernetes objects (the names other parts share live in clusterspec.names)."""

from __future__ import annotations

from clusterspec.names import (  # noqa: F401  (re-exported for the core's modules)
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    DRIFTED_TAINT,
    GANG_ANNOTATION,
    HOSTNAME_KEY,
    INSTANCE_TYPE_KEY,
    JOB_INDEX_LABEL,
    JOB_NAME_LABEL,
    NODE_GROUP_LABEL,
    POD_GROUP_LABEL,
    POD_GROUP_SIZE_ANNOTATION,
    POD_SCALE_UP_DELAY_ANNOTATION,
    REGION_KEY,
    SAFE_TO_EVICT_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    SCALE_DOWN_DISABLED_ANNOTATION,
    TO_BE_DELETED_TAINT,
    TO_BE_DELETED_TAINTS,
    ZONE_KEY,
)

# Node annotations the plan asks the controller to set (docs/planner.md, "Idle time" and "Removal").
IDLE_SINCE_ANNOTATION = "research.cluster/idle-since"  # ISO-8601: when the node last ran a non-DaemonSet pod
TO_BE_DELETED_SINCE_ANNOTATION = "research.cluster/to-be-deleted-since"  # ISO-8601: when it was tainted
DRIFTED_SINCE_ANNOTATION = "research.cluster/drifted-since"  # ISO-8601: when the plan first saw it drifted

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"  # on pods: "true" blocks the node's removal
SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized"
NETWORK_UNAVAILABLE_TAINT = "node.kubernetes.io/network-unavailable"
# cluster-autoscaler's startup taints (FAQ, "How does Cluster Autoscaler treat nodes with status/startup/ignore
# taints?"): a node carrying one is unready but counted as coming up
STARTUP_TAINT_PREFIXES = (
    "startup-taint.cluster-autoscaler.kubernetes.io/",
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
)

# Storage: what kube-scheduler's VolumeBinding plugin reads (k8s.io/kubernetes pkg/scheduler/framework/plugins/
# volumebinding, pkg/controller/volume/persistentvolume/util, component-helpers/storage/volume)
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"  # the PV controller finished binding the claim
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"  # read before spec.storageClassName
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"  # a class of static (e.g. local) volumes: nothing provisions
