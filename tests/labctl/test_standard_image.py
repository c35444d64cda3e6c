"""The standard image's Dockerfile and the data every other part reads about it (clusterspec/data/standard_image.yaml)
agree: the pins, the EFA installer, the layers in their order; and Packer pre-pulls exactly that image."""

from __future__ import annotations

import re

from clusterspec import standard_image
from clusterspec.loader import load_spec
from provision.packer.variables import packer_variables
from tests.support import ROOT

DIR = ROOT / "deploy" / "standard-image"


def _pins(path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[standard_image.normalise(name)] = version
    return out


def test_the_dockerfile_installs_exactly_the_listed_packages() -> None:
    assert (
        _pins(DIR / "requirements-torch.txt") | _pins(DIR / "requirements.txt") == standard_image.packages()
    )


def test_efa_installer_is_the_clusters_release() -> None:
    text = (DIR / "Dockerfile").read_text()
    (arg,) = re.findall(r"^ARG EFA_INSTALLER=(\S+)$", text, flags=re.M)
    assert arg == standard_image.data()["efa"]["installer"] == load_spec().software.efa_installer
    assert (
        "--skip-kmod" in text and "aws-efa-installer.key" in text
    )  # the node has the module; the tarball verified


def test_layers_follow_the_dockerfile_steps() -> None:
    layers = list(standard_image.layers())
    assert layers[:3] == ["ubuntu24.04", "cuda-runtime", "cudnn"]  # the base's own
    text = (DIR / "Dockerfile").read_text()
    order = [
        text.index(s)
        for s in ("efa_installer.sh", "uv venv", "requirements-torch.txt ", "requirements.txt \\")
    ]
    assert order == sorted(order) and layers[3:] == [
        "efa-libfabric-ofi-nccl",
        "python-venv",
        "torch-cuda12",
        "frameworks",
    ]


def test_packer_prepulls_the_standard_image() -> None:
    spec = load_spec()
    researchers = spec.researchers.model_copy(
        update={"registry": "123456789012.dkr.ecr.us-west-2.amazonaws.com"}
    )
    values = packer_variables(spec.model_copy(update={"researchers": researchers}), "us-west-2")
    # a fresh account's first bake (before the registry's repository exists): nothing to pre-pull (issue 36)
    assert packer_variables(spec, "us-west-2", prepull=False)["standard_image"] == ""
    assert (
        values["standard_image"]
        == "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/standard:1-cuda12.9-py3.11"
    )
