"""Which NVIDIA driver (branch and kernel-module flavour) and CUDA a set of GPU models can run.

Images and physical nodes both ask this module, so a Titan X server and a V100 image get the proprietary
modules from a branch no newer than R580, and Turing-and-newer fleets get the open modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler import catalog

# The oldest driver branch each CUDA toolkit release needs (NVIDIA's CUDA release notes, table 3).
CUDA_MIN_DRIVER = {
    "11.8": 520, "12.0": 525, "12.1": 530, "12.2": 535, "12.3": 545, "12.4": 550,
    "12.5": 555, "12.6": 560, "12.8": 570, "12.9": 575, "13.0": 580,
}  # fmt: skip
# CUDA 13 drops Maxwell, Pascal and Volta (compute capability below 7.5).
CUDA13_MIN_CC = 7.5


@dataclass(frozen=True)
class Driver:
    branch: int
    flavour: str  # "open" or "proprietary"

    @property
    def package(self) -> str:
        """Ubuntu's metapackage: ``nvidia-driver-570-server`` or ``nvidia-driver-570-server-open``."""
        return f"nvidia-driver-{self.branch}-server" + ("-open" if self.flavour == "open" else "")


def select_driver(branch: int, flavour: str, models: set[str]) -> Driver:
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
    return Driver(branch=branch, flavour=flavour)


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
