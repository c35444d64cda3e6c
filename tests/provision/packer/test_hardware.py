"""One image for every instance type: it installs what the spec's types need, and each type activates only what its
hardware has. The boot-time decision is the real packer/scripts/gpu-hardware.sh run on each type's PCI bus."""

from __future__ import annotations

import subprocess

import pytest

from clusterspec import catalog
from clusterspec.loader import load_spec, spec_from_data
from provision import hardware
from provision.chef.image_scripts import script_attributes
from provision.packer import template
from provision.packer.variables import packer_variables
from tests.provision.packer.fake_machine import SCRIPTS, Machine, build
from tests.support import example_spec_data

GPU_TYPES = sorted(t for t, row in catalog.instance_types().items() if row.gpus)


def only_type(instance_type: str):
    """The example spec with a single node group of ``instance_type`` wherever it is offered."""
    data = example_spec_data()
    it = catalog.instance_type(instance_type)
    for region in data["regions"]:
        region["node_groups"] = (
            [{"name": "g", "instance_types": [instance_type], "min": 0, "max": 1}]
            if it.offered_in(region["name"])
            else []
        )
    if instance_type.startswith(
        "p2."
    ):  # K80: R470 and CUDA 11.x only; the table has no such release for 24.04
        pytest.skip("K80 needs driver branch 470, which Ubuntu 24.04 does not carry")
    for site in data["sites"]:
        site["servers"] = [s for s in site["servers"] if not s.get("gpus")]
    return spec_from_data(data, "cluster.yaml")


def on_boot(tmp_path, instance_type: str) -> dict:
    hw = hardware.hardware(instance_type)
    nvswitches = hardware.NVSWITCH_CHIPS.get(hw.gpu_model, 0) if hw.nvswitch else 0
    env = build(tmp_path, Machine(gpus=hw.gpus, nvswitches=nvswitches, efa_devices=hw.efa))

    def ask(what: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(SCRIPTS / "gpu-hardware.sh"), what], env=env, capture_output=True, text=True
        )

    return {
        "gpus": int(ask("gpus").stdout),
        "fabricmanager": ask("nvswitch").returncode == 0,
        "efa": ask("efa").returncode == 0,
    }


def test_the_table_marks_the_nvswitch_and_efa_types():
    table = hardware.table()
    assert {t for t, h in table.items() if h.nvswitch} == {"p4d.24xlarge", "p5.48xlarge"}
    assert table["p5.48xlarge"].efa == 32 and table["p4d.24xlarge"].efa == 4
    assert table["g4dn.xlarge"].efa == 0 and table["p3.16xlarge"].efa == 0


@pytest.mark.parametrize("instance_type", GPU_TYPES)
def test_every_gpu_type_gets_what_it_needs_and_nothing_else(tmp_path, instance_type):
    hw = hardware.hardware(instance_type)
    cluster = only_type(instance_type)
    # Installed: an image for a spec with only this type carries exactly its extras.
    values = packer_variables(cluster, cluster.spill_over_order[0])
    installed = {"fabricmanager"} if values["nvidia_fabricmanager"] == "1" else set()
    installed |= {"efa"} if values["efa_installer_version"] else set()
    assert installed == set(hw.needs)
    # Activated: on its own PCI bus, the one image's boot-time checks turn on exactly what it needs.
    seen = on_boot(tmp_path, instance_type)
    assert seen["gpus"] == hw.gpus
    assert {k for k in ("fabricmanager", "efa") if seen[k]} == set(hw.needs)


def test_the_example_image_installs_fabric_manager_and_efa_and_the_lab_neither(tmp_path):
    cluster = load_spec()
    values = packer_variables(cluster, "us-west-2")
    assert values["nvidia_fabricmanager"] == "1"  # p4d.24xlarge
    assert values["efa_installer_version"] == cluster.software.efa_installer  # p4d, g5.12xlarge
    lab = script_attributes(cluster, "lab")["environment"]
    assert lab["NVIDIA_FABRICMANAGER"] == "0" and lab["EFA_INSTALLER_VERSION"] == ""


def test_fabric_manager_runs_only_where_the_hardware_check_says_so():
    order = template.provisioner_scripts()
    assert order.index("gpu-hardware.sh") < order.index("fabric-manager.sh")  # the helper exists first
    unit = (SCRIPTS / "fabric-manager.sh").read_text()
    assert "ExecCondition=/usr/local/sbin/cluster-gpu-hardware nvswitch" in unit
    assert (
        'install -m 0755 "$0" /usr/local/sbin/cluster-gpu-hardware'
        in (SCRIPTS / "gpu-hardware.sh").read_text()
    )
