"""The bundled instance-type and GPU tables (``clusterspec/data/*.yaml``).

One source of truth for vCPU, memory, GPUs and prices: spec validation, the planner (scale-from-zero
capacity, cost), the AWS adapter's fallback and the simulator all read it through this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from clusterspec import kubelet_reserved


@dataclass(frozen=True)
class InstanceType:
    name: str
    vcpu: int
    memory_gib: float
    gpus: int
    gpu_model: str | None
    price: dict[str, float]  # region -> on-demand USD/hour; a missing region does not offer the type
    efa: int = 0  # EFA interfaces (vpc.amazonaws.com/efa once the EFA device plugin runs: deploy/addons)
    nvswitch: bool = False  # an NVSwitch fabric (the fabric manager must run: provision/hardware.py)

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    def offered_in(self, region: str) -> bool:
        return region in self.price

    def price_in(self, region: str) -> float | None:
        return self.price.get(region)

    def allocatable(self) -> dict[str, str]:
        """Kubernetes allocatable quantities for a node of this type: what its kubelet reports under the join's
        KubeletConfiguration (clusterspec.kubelet_reserved: the same reservations, one formula), with the
        device plugins' GPUs and EFA interfaces."""
        out = kubelet_reserved.allocatable(self.vcpu, self.memory_gib)
        if self.gpus:
            out["nvidia.com/gpu"] = str(self.gpus)
        if self.efa:
            out["vpc.amazonaws.com/efa"] = str(self.efa)
        return out


@dataclass(frozen=True)
class GpuModel:
    name: str
    architecture: str
    compute_capability: str
    memory_gib: int
    max_driver_branch: int | None
    open_kernel_modules: bool


def _load(name: str) -> dict:
    # libyaml's loader where PyYAML has it: the tables load in a tenth of the time of the pure-Python one
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(resources.files("clusterspec").joinpath("data", name).read_text(), Loader=loader)  # noqa: S506


@cache
def instance_types() -> dict[str, InstanceType]:
    out = {}
    for name, row in _load("instance_types.yaml")["types"].items():
        out[name] = InstanceType(
            name=name,
            vcpu=int(row["vcpu"]),
            memory_gib=float(row["memory_gib"]),
            gpus=int(row.get("gpus", 0)),
            gpu_model=row.get("gpu_model"),
            price={r: float(p) for r, p in (row.get("price") or {}).items()},
            efa=int(row.get("efa", 0)),
            nvswitch=bool(row.get("nvswitch", False)),
        )
    return out


@cache
def gpu_models() -> dict[str, GpuModel]:
    return {name: GpuModel(name=name, **row) for name, row in _load("gpus.yaml")["models"].items()}


@cache
def zones() -> dict[str, list[str]]:
    """Region => the names of its availability zones (clusterspec/data/zones.yaml)."""
    return {
        region: [f"{region}{letter}" for letter in letters]
        for region, letters in _load("zones.yaml")["zones"].items()
    }


def instance_type(name: str) -> InstanceType:
    """The table's row for ``name``; KeyError names the type when it is unknown."""
    try:
        return instance_types()[name]
    except KeyError:
        raise KeyError(f"unknown instance type {name!r}") from None
