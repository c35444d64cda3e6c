"""The lab's standard image (``data/standard_image.yaml``): its packages, EFA environment and layers.

Read by ``lab`` (which requirements it already satisfies, its reference in the cluster's settings) and by Packer's
pre-pull (provision/packer/variables.py).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import yaml


@cache
def data() -> dict:
    return yaml.safe_load(resources.files("clusterspec").joinpath("data", "standard_image.yaml").read_text())


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def packages() -> dict[str, str]:
    return {normalise(k): str(v) for k, v in data()["packages"].items()}


def layers() -> dict[str, float]:
    """Layer name -> compressed MB, base first."""
    return {str(k): float(v) for k, v in data()["layers"].items()}


def efa_env() -> dict[str, str]:
    return {str(k): str(v) for k, v in data()["efa"]["env"].items()}


def repository() -> str:
    return str(data()["repository"])


def tag(cuda: str, python: str) -> str:
    return str(data()["tag"]).format(cuda=cuda, python=python)


def reference(registry: str | None, cluster: str, cuda: str, python: str) -> str:
    """``<registry>/<cluster>/standard:<tag>`` (no registry: ``<cluster>/standard:<tag>``)."""
    repo = f"{cluster}/{repository()}:{tag(cuda, python)}"
    return f"{registry}/{repo}" if registry else repo
