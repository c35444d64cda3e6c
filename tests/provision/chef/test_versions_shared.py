"""The image (Packer variables -> script environment) and the cookbook (attributes) get versions from the spec."""

from __future__ import annotations

from provision.packer import template
from provision.packer.variables import packer_variables
from tests.provision.chef.support import generate, lock_text, write_lock
from tests.provision.chef.test_attributes import _cluster

CHANGED = {
    "software.ubuntu": "22.04",
    "software.nvidia_driver.branch": 570,
    "software.nvidia_driver.version": "570.195.03",
    "software.cuda": "12.8",
    "software.containerd": "2.1.4",
    "software.nvidia_container_toolkit": "1.18.0",
    "kubernetes.version": "1.36.2",
}
EXPECTED = {
    "UBUNTU_VERSION": "22.04",
    "NVIDIA_DRIVER_BRANCH": "570",
    "NVIDIA_DRIVER_VERSION": "570.195.03",
    "CUDA_VERSION": "12.8",
    "CONTAINERD_VERSION": "2.1.4",
    "NVIDIA_CONTAINER_TOOLKIT_VERSION": "1.18.0",
    "KUBERNETES_VERSION": "1.36.2",
    "KUBERNETES_MINOR": "1.36",
}


AFTER_LOCK = {  # what a bake of the changed spec records
    "580.178.04-0ubuntu0.24.04.1": "570.195.03-0ubuntu0.22.04.1",
    "-580-server": "-570-server",
    "12-9": "12-8",
    "2.2.6-1~ubuntu.24.04~noble": "2.1.4-1~ubuntu.22.04~jammy",
    "1.17.8-1": "1.18.0-1",
    "1.35.8-1.1": "1.36.2-1.1",
}


def _both(cluster, tmp_path, lock: dict | None = None) -> tuple[dict, dict]:
    image = template.script_environment(packer_variables(cluster, "us-west-2"))
    write_lock(tmp_path / "ami", lock_text(lock or {}))
    chef = generate(cluster, tmp_path, ami_dir=tmp_path / "ami")[0]["cluster_node"]["image_scripts"][
        "environment"
    ]
    return image, chef


def test_changing_the_spec_changes_image_and_cookbook_alike(tmp_path):
    before_image, before_chef = _both(_cluster({}), tmp_path / "before")
    after_image, after_chef = _both(_cluster(CHANGED), tmp_path / "after", AFTER_LOCK)
    for name, value in EXPECTED.items():
        assert before_image[name] != value and before_chef[name] != value
        assert after_image[name] == value, name
        assert after_chef[name] == value, name
    assert (
        after_image["NVIDIA_DRIVER_PACKAGE"]
        == after_chef["NVIDIA_DRIVER_PACKAGE"]
        == "nvidia-driver-570-server"
    )


def test_the_image_scripts_read_every_version_from_the_environment():
    scripts = "".join(p.read_text() for p in (template.TEMPLATE_DIR / "scripts").glob("*.sh"))
    for value in ("24.04", "580", "580.178.04", "12.9", "2.2.6", "1.17.8", "1.35.8", "1.35", "1.47.0"):
        assert value not in scripts, f"a version ({value}) is written into packer/scripts instead of read"
