"""Which NVIDIA driver (branch and kernel-module flavour) and CUDA a set of GPU models can run.

Images and physical nodes both ask this module, so a Titan X server and a V100 image get the proprietary
modules from a branch no newer than R580, and Turing-and-newer fleets get the open modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from clusterspec import catalog

STACK_TABLE = Path(__file__).resolve().parent / "data" / "gpu_stack.yaml"

# The oldest driver branch each CUDA toolkit release needs (NVIDIA's CUDA release notes, table 3).
CUDA_MIN_DRIVER = {
    "11.8": 520, "12.0": 525, "12.1": 530, "12.2": 535, "12.3": 545, "12.4": 550,
    "12.5": 555, "12.6": 560, "12.8": 570, "12.9": 575, "13.0": 580, "13.1": 590,
}  # fmt: skip
# CUDA 13 drops Maxwell, Pascal and Volta (compute capability below 7.5).
CUDA13_MIN_CC = 7.5


@cache
def stack_table() -> dict:
    """``clusterspec/data/gpu_stack.yaml``: supported versions, driver releases per Ubuntu, add-on images."""
    return yaml.safe_load(STACK_TABLE.read_text())


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


@dataclass(frozen=True)
class Driver:
    branch: int
    flavour: str  # "open" or "proprietary"
    version: str = ""  # the exact release, e.g. 580.178.04

    @property
    def package(self) -> str:
        """Ubuntu's metapackage: ``nvidia-driver-580-server`` or ``nvidia-driver-580-server-open``."""
        return f"nvidia-driver-{self.branch}-server" + ("-open" if self.flavour == "open" else "")

    @property
    def fabricmanager_package(self) -> str:
        """Ubuntu's fabric manager for this branch; it must be at exactly the driver's version."""
        return f"nvidia-fabricmanager-{self.branch}"


def driver_versions(ubuntu: str, branch: int) -> list[str]:
    """The releases of ``branch`` Ubuntu ``ubuntu``'s archive publishes (newest first), [] when none."""
    return [str(v) for v in (stack_table()["nvidia_driver_versions"].get(ubuntu) or {}).get(branch, [])]


def check_driver_version(ubuntu: str, branch: int, version: str) -> None:
    """ValueError unless ``version`` is a release of ``branch`` that exists for Ubuntu ``ubuntu``."""
    if version.split(".")[0] != str(branch):
        raise ValueError(f"driver version {version} is not of branch {branch} (e.g. {branch}.x.y)")
    known = driver_versions(ubuntu, branch)
    if not known:
        branches = sorted(stack_table()["nvidia_driver_versions"].get(ubuntu) or {}, reverse=True)
        raise ValueError(
            f"Ubuntu {ubuntu} has no nvidia-driver-{branch}-server "
            f"(branches: {', '.join(map(str, branches)) or 'none recorded'})"
        )
    if version not in known:
        raise ValueError(
            f"driver {version} does not exist for Ubuntu {ubuntu} (known {branch} releases: {', '.join(known)})"
        )


def check_toolkit(version: str) -> None:
    """ValueError when the NVIDIA Container Toolkit is older than the container-escape fix."""
    fixed = str(stack_table()["nvidia_container_toolkit_min"])
    if _version(version) < _version(fixed):
        raise ValueError(
            f"NVIDIA Container Toolkit {version} is affected by CVE-2025-23266 (container escape); "
            f"use {fixed} or newer"
        )


def check_containerd(version: str) -> None:
    major = int(stack_table()["containerd_min_major"])
    if _version(version)[0] < major:
        raise ValueError(f"containerd {version} is out of support; use {major}.x (e.g. 2.2.6)")


def check_kubernetes(version: str) -> None:
    minors = [str(m) for m in stack_table()["kubernetes_supported_minors"]]
    minor = ".".join(version.split(".")[:2])
    if minor not in minors:
        raise ValueError(
            f"Kubernetes {minor} is not a supported minor; use one of {', '.join(minors)} (e.g. {minors[0]}.8)"
        )


def addon_images(branch: int) -> dict[str, str]:
    """The device plugin and DCGM exporter images for a driver ``branch`` (the newest row not above it)."""
    rows = stack_table()["addons_by_driver_branch"]
    fitting = [b for b in rows if int(b) <= branch]
    if not fitting:
        raise ValueError(f"no device plugin is recorded for driver branch {branch} (oldest: {min(rows)})")
    return dict(rows[max(fitting)]) | {"efa_device_plugin": stack_table()["efa_device_plugin"]}


def select_driver(branch: int, flavour: str, models: set[str], version: str = "") -> Driver:
    """The driver for GPUs of ``models``; ValueError says why the combination is impossible."""
    known = catalog.gpu_models()
    for m in sorted(models):
        if m not in known:
            raise ValueError(f"unknown GPU model {m!r} (known: {', '.join(sorted(known))})")
    too_new = [
        m for m in sorted(models) if known[m].max_driver_branch and branch > known[m].max_driver_branch
    ]
    if too_new:
        m = too_new[0]
        raise ValueError(
            f"driver branch {branch} does not support {m} ({known[m].architecture}); "
            f"use branch {known[m].max_driver_branch} or older"
        )
    closed_only = sorted(m for m in models if not known[m].open_kernel_modules)
    if flavour == "open" and closed_only:
        raise ValueError(
            f"open kernel modules do not support {closed_only[0]} ({known[closed_only[0]].architecture}); "
            "use flavour proprietary or auto"
        )
    if flavour == "auto":
        flavour = "proprietary" if closed_only or not models else "open"
    return Driver(branch=branch, flavour=flavour, version=version)


def check_cuda(cuda: str, branch: int, models: set[str]) -> None:
    """ValueError when CUDA ``cuda`` cannot run on ``branch`` or on one of ``models``."""
    need = CUDA_MIN_DRIVER.get(cuda)
    if need is None:
        raise ValueError(f"unknown CUDA release {cuda!r} (known: {', '.join(CUDA_MIN_DRIVER)})")
    if branch < need:
        raise ValueError(f"CUDA {cuda} needs driver branch {need} or newer, not {branch}")
    if int(cuda.split(".")[0]) >= 13:
        known = catalog.gpu_models()
        old = sorted(m for m in models if float(known[m].compute_capability) < CUDA13_MIN_CC)
        if old:
            raise ValueError(
                f"CUDA {cuda} does not support {old[0]} ({known[old[0]].architecture}); use CUDA 12.x"
            )
