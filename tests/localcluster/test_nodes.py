"""Who takes a Ready node of the node agent (localcluster/nodes.py): kwok, or with ``process_gpu_nodes`` the
process kubelet for the nodes of GPU groups (whose pods then run as processes, as `invoke local-cluster` wants)."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from localcluster.kubelet.agent import LABEL, VALUE
from localcluster.nodes import NodeAgent
from localcluster.stack import KWOK_LABEL

GPU_GROUP = {"name": "gpu", "allocatable": {"cpu": "8", "nvidia.com/gpu": "1"}}
CPU_GROUP = {"name": "cpu", "allocatable": {"cpu": "8"}}


@pytest.mark.parametrize(
    ("process", "group", "label"),
    [(False, GPU_GROUP, (KWOK_LABEL, "fake")), (False, CPU_GROUP, (KWOK_LABEL, "fake")),
     (True, GPU_GROUP, (LABEL, VALUE)), (True, CPU_GROUP, (KWOK_LABEL, "fake"))],
)  # fmt: skip
def test_gpu_nodes_go_to_the_process_kubelet_only_when_asked(process, group, label) -> None:
    agent = NodeAgent(cloud=None, api=k8s.ApiClient(), process_gpu_nodes=process)
    assert agent.taker(group) == label
