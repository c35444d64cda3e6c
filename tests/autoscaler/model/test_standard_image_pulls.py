"""The kubelet's pulls of the lab's images in the model (autoscaler/model/images.py): the standard image's layers and
sizes from clusterspec/data/standard_image.yaml, a new GPU node already holding them (the GPU image pre-pulls it),
a requirements image adding one layer, and a CPU node pulling everything."""

from __future__ import annotations

import pytest

from autoscaler.model import images as I
from clusterspec import standard_image

STANDARD = "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/standard:1-cuda12.9-py3.11"
DEPS = "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/research:deps-0123456789abcdef"
GPU_GROUP = {"allocatable": {"cpu": "63", "nvidia.com/gpu": "8"}}
CPU_GROUP = {"allocatable": {"cpu": "7"}}


def _seconds(node: I.NodeImages, image: str) -> float:
    return I.pull_plan(node, image, "IfNotPresent", 0.0)[0]


def test_the_standard_image_is_known_under_any_registry() -> None:
    assert I.layers(STANDARD) == standard_image.layers()
    assert I.layers("localhost:5000/other/standard:7") == standard_image.layers()
    assert sum(standard_image.layers().values()) > 5000  # CUDA, cuDNN, torch: gigabytes


def test_a_new_gpu_node_pulls_only_what_changed_since_the_bake() -> None:
    cat = I.catalog()
    baked = I.NodeImages(layers=I.baked(GPU_GROUP))
    assert _seconds(baked, STANDARD) == pytest.approx(
        cat["per_image_s"]
    )  # manifest only: every layer is there
    deps = _seconds(I.NodeImages(layers=I.baked(GPU_GROUP)), DEPS)
    assert deps == pytest.approx(cat["per_image_s"] + cat["default_mb"] / cat["bandwidth_mb_s"])
    bare = _seconds(I.NodeImages(layers=I.baked(CPU_GROUP)), STANDARD)
    total = sum(standard_image.layers().values())
    assert bare == pytest.approx(cat["per_image_s"] + total / cat["bandwidth_mb_s"])


def test_an_init_container_and_its_main_container_on_one_image_pull_it_once() -> None:
    """The kubelet starts init containers first, each after its image is there (pkg/kubelet/kuberuntime
    SyncPod): the main container on the same image finds it present, so the pod pays one pull, not two."""
    from autoscaler.model import ClusterModel, VirtualClock
    from tests.autoscaler.model.builders import group

    model = ClusterModel(VirtualClock(start=0.0), [group(desired=1)])
    model.image_pulls = True
    model.advance(600)
    (node,) = model.store.list("nodes")
    image = "registry.example/other:1"  # one layer of default_mb: no node has it
    pod = {"metadata": {"name": "p", "namespace": "default"},
           "spec": {"nodeName": node["metadata"]["name"], "tolerations": [{"operator": "Exists"}],
                    "initContainers": [{"name": "code", "image": image}],
                    "containers": [{"name": "main", "image": image}]}}  # fmt: skip
    model.store.create("namespaces", {"metadata": {"name": "default"}}) if not model.store.find(
        "namespaces", None, "default") else None  # fmt: skip
    model.submit_pod(pod)
    cat = I.catalog()
    one = cat["per_image_s"] + cat["default_mb"] / cat["bandwidth_mb_s"]
    model.advance(600 + one + 0.01)
    assert model.store.get("pods", "default", "p")["status"]["phase"] == "Running"
