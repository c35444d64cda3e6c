"""What an instance type's hardware needs beyond the driver: NVSwitch (fabric manager) and EFA.

The features come from the instance table (``clusterspec/data/instance_types.yaml``, columns ``efa`` and
``nvswitch``, through ``clusterspec.catalog``). One AMI serves every instance type of the spec, so the image *installs* what any cloud type needs
and the node *activates* only what its own hardware has: the fabric manager unit runs only when an NVSwitch is
on the PCI bus, the EFA kernel module binds only to an EFA device (``packer/scripts/gpu-hardware.sh``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from clusterspec import catalog
from clusterspec.spec import Cluster

# PCI identities the boot-time check looks for (sysfs ``vendor``/``device``/``class``).
NVIDIA_VENDOR = "0x10de"
AMAZON_VENDOR = "0x1d0f"
NVSWITCH_CLASS = "0x068000"  # "bridge, other": how NVSwitches enumerate (GPUs are 0x0300xx/0x0302xx)
EFA_DEVICES = (
    "0xefa0",
    "0xefa1",
    "0xefa2",
    "0xefa3",
)  # EFA generations 1-4 (Linux drivers/infiniband/hw/efa)
# NVSwitch chips on the HGX baseboards of the NVSwitch types (A100 HGX: 6 second-generation, H100 HGX: 4 third).
NVSWITCH_CHIPS = {"A100": 6, "H100": 4}


@dataclass(frozen=True)
class Hardware:
    instance_type: str
    gpus: int
    gpu_model: str | None
    efa: int  # EFA interfaces (0: none)
    nvswitch: bool

    @property
    def needs(self) -> frozenset[str]:
        """The extra components a node of this type must run: ``fabricmanager``, ``efa``."""
        return frozenset({"fabricmanager"} if self.nvswitch else set()) | frozenset(
            {"efa"} if self.efa else set()
        )


@cache
def table() -> dict[str, Hardware]:
    return {
        name: Hardware(instance_type=name, gpus=t.gpus, gpu_model=t.gpu_model, efa=t.efa, nvswitch=t.nvswitch)
        for name, t in catalog.instance_types().items()
    }


def hardware(instance_type: str) -> Hardware:
    try:
        return table()[instance_type]
    except KeyError:
        raise KeyError(f"unknown instance type {instance_type!r}") from None


def cloud_instance_types(cluster: Cluster) -> list[str]:
    return sorted(
        {t for r in cluster.regions for g in r.node_groups for t in g.instance_types if t in table()}
    )


def image_components(cluster: Cluster) -> frozenset[str]:
    """What the one image installs: the union of what the spec's cloud instance types need."""
    out: set[str] = set()
    for t in cloud_instance_types(cluster):
        out |= hardware(t).needs
    return frozenset(out)
