"""The cluster model behind the simulator (virtual clock); the local stack is the real control plane (localcluster/).

See docs/model.md.
"""

from simulator.model.adapters import ModelCloud, ModelCluster
from simulator.model.clock import VirtualClock, WallClock
from simulator.model.cloud import ValidationError
from simulator.model.cluster_model import ClusterModel, ModelStats, PodRecord
from simulator.model.pods import DURATION_ANNOTATION
from simulator.model.spec_groups import groups_from_spec

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
