"""The cluster model behind the simulator (virtual clock); the local stack is the real control plane (localcluster/).

See docs/model.md.
"""

from autoscaler.model.adapters import ModelCloud, ModelCluster
from autoscaler.model.clock import VirtualClock, WallClock
from autoscaler.model.cloud import ValidationError
from autoscaler.model.cluster_model import ClusterModel, ModelStats, PodRecord
from autoscaler.model.pods import DURATION_ANNOTATION
from autoscaler.model.spec_groups import groups_from_spec

__all__ = [
    "DURATION_ANNOTATION",
    "ClusterModel",
    "ModelCloud",
    "ModelCluster",
    "ModelStats",
    "PodRecord",
    "ValidationError",
    "VirtualClock",
    "WallClock",
    "groups_from_spec",
]
