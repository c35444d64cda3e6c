"""The kubelet's image pulls (pkg/kubelet/images): before a container starts, its image is pulled unless the
node has it (``imagePullPolicy: IfNotPresent``, the default for a tagged image) or pulled again (``Always``: the
default for ``:latest`` or no tag; layers the node has are not downloaded again). A pull takes the image's request
overhead plus its missing layers' size over the node's pull rate (data/images.yaml); pulls on a node are one at a
time (KubeletConfiguration ``serializeImagePulls: true``, the default). Meanwhile the container waits in
``ContainerCreating``. Events as the kubelet's: ``Pulling`` 'Pulling image "x"', ``Pulled`` 'Successfully pulled
image "x" in 9.1s (12.3s including waiting). Image size: 123456 bytes.' or 'Container image "x" already present on
machine'. Off in the simulator (its node delays include the pulls); ``image_pulls`` turns it on.

The lab's standard image (clusterspec/data/standard_image.yaml: its layers and their sizes) is known under any
registry (``<registry>/<cluster>/standard``), an image ``lab`` builds from a job's requirements
(``.../<repository>:deps-<hash>``) is the standard image's layers plus one of its own, and a GPU node booted from the
lab's GPU image starts with the standard image's layers already on disk (packer/scripts/prepull-images.sh): a new
node pulls only what changed since the bake."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterspec import standard_image

DATA = Path(__file__).with_name("data") / "images.yaml"


@functools.lru_cache(maxsize=1)
def catalog() -> dict:
    return yaml.safe_load(DATA.read_text())


def repository(image: str) -> str:
    """The image without its tag or digest."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name[: len(name) - len(last)] + last.split(":", 1)[0]


def layers(image: str) -> dict[str, float]:
    """The image's layers (name -> MB); unknown images are one layer of their own."""
    cat = catalog()
    repo = repository(image)
    entry = (cat.get("images") or {}).get(repo)
    if entry is None and repo.endswith("/" + standard_image.repository()):
        return standard_image.layers()
    if entry is None and repo.endswith("/autoscaler"):  # the lab's own registry, whichever it is
        entry = (cat.get("images") or {}).get("autoscaler")
    if entry is None and image.rsplit(":", 1)[-1].startswith("deps-"):  # lab's requirements image
        return {**standard_image.layers(), f"layer-of:{image}": float(cat["default_mb"])}
    if entry is None:
        return {f"layer-of:{image}": float(cat["default_mb"])}
    return {str(k): float(v) for k, v in (entry.get("layers") or {}).items()}


def baked(group_spec: dict) -> set[str]:
    """The layers a new node of the group has on disk at boot: the standard image's on GPU nodes (the lab's GPU
    image pre-pulls it), nothing elsewhere."""
    gpus = str((group_spec.get("allocatable") or {}).get("nvidia.com/gpu", "0"))
    return set(standard_image.layers()) if gpus not in ("", "0") else set()


@dataclass
class NodeImages:
    layers: set[str] = field(default_factory=set)
    images: set[str] = field(default_factory=set)
    busy_until: float = 0.0  # serialized pulls: when the last queued one is done


def pull_plan(
    node: NodeImages, image: str, policy: str, now: float, scale=lambda s: s
) -> tuple[float, float, float]:
    """(model seconds the pull itself takes, when it starts on the clock, size in bytes) for a pull on ``node``;
    (0, now, 0) when the image is used as present. ``scale`` turns model seconds into clock seconds."""
    if policy == "Never" or (policy != "Always" and image in node.images):
        return 0.0, now, 0.0
    cat = catalog()
    missing = {k: v for k, v in layers(image).items() if k not in node.layers}
    size_mb = sum(layers(image).values())
    seconds = float(cat["per_image_s"]) + sum(missing.values()) / float(cat["bandwidth_mb_s"])
    start = max(now, node.busy_until)
    node.busy_until = start + scale(seconds)
    return seconds, start, size_mb * 1_000_000
