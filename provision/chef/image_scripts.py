"""The Packer image scripts, shipped in the cookbook: the same files, order and environment as the image."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from provision import checkout
from provision.packer import template
from provision.packer.variables import image_driver, packer_variables

ROOT = Path(__file__).resolve().parents[2]
COOKBOOK = ROOT / "chef" / "cookbooks" / "cluster_node"
FILES_DIR = COOKBOOK / "files" / "default" / "image_scripts"  # generated, ignored by git
# What a server that is not a Kubernetes worker (gateway, NFS) runs: no driver, runtime or kubelet.
COMMON = ["base.sh", "aws-cli.sh", "storage-client.sh"]
# What a Kubernetes member that runs no jobs (the site gateway, a flannel member for the pod routes) adds: the
# runtime, kubelet and flannel's prerequisites (and the apt repositories they come from); no driver, CUDA or GPU checks.
NODE = [*COMMON, "apt-repositories.sh", "containerd.sh", "kubernetes.sh", "flannel-prereqs.sh"]
PER_SERVER = ""  # environment values the recipe fills in for each server (EXPECTED_GPUS, UNATTENDED_UPGRADES)


def copy_scripts(dest: Path = FILES_DIR) -> list[Path]:
    """Copy packer/scripts/*.sh into the cookbook's files (replacing an older copy)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    return [
        Path(shutil.copy2(src, dest / src.name))
        for src in sorted(checkout.require(template.TEMPLATE_DIR / "scripts").glob("*.sh"))
    ]


def script_attributes(cluster, site: str) -> dict:
    """Order, environment and a digest per script (content + environment: a change re-runs it in Chef).

    The environment is the template's ``local.script_env`` evaluated with the image's variables, except that
    the driver is chosen for the site's GPU models (Titan X: proprietary, branch <= 580).
    """
    values = packer_variables(cluster, cluster.regions[0].name)
    driver = image_driver(cluster, site=site)
    values |= {
        "nvidia_driver_branch": str(driver.branch),
        "nvidia_driver_flavour": driver.flavour,
        "nvidia_driver_package": driver.package,
        "nvidia_driver_version": driver.version,
        # Physical servers (Titan X) have no NVSwitch and no EFA: neither is installed on them.
        "nvidia_fabricmanager": "0",
        "efa_installer_version": "",
        # Set per server by the recipe: the server's GPU count, and upgrades off on workers only.
        "expected_gpus": PER_SERVER,
        "unattended_upgrades": PER_SERVER,
    }
    env = template.script_environment(values)
    order = template.provisioner_scripts()
    scripts_dir = template.TEMPLATE_DIR / "scripts"
    env_text = json.dumps(env, sort_keys=True)
    digests = {
        name: hashlib.sha256((scripts_dir / name).read_bytes() + env_text.encode()).hexdigest()[:16]
        for name in order
    }
    return {
        "order": order,
        "common": [s for s in order if s in COMMON],
        "node": [s for s in order if s in NODE],
        "environment": env,
        "digests": digests,
    }
