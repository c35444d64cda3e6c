"""Packer variables from the spec: every version the image scripts install comes from here."""

from __future__ import annotations

import ipaddress
import json
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from clusterspec import catalog, drivers
from clusterspec.errors import UserError
from clusterspec.names import IMAGE_ROOT_GIB
from clusterspec.spec import Cluster
from provision import hardware, lab_images
from provision.packer.images import source_ami_name

BUILDER_INSTANCE_TYPE = "g4dn.xlarge"  # a GPU, so check.sh sees the driver module next to a real device


# The signing keys the scripts verify their downloads with (clusterspec/data/gpu_stack.yaml, issue 26).
SIGNING_KEYS = ("aws_cli_key_fingerprint", "docker_apt_key_fingerprint", "nvidia_container_toolkit_key_fingerprint",
                "kubernetes_apt_key_fingerprint", "cuda_repo_key_fingerprint")  # fmt: skip


def image_driver(cluster: Cluster, site: str | None = None) -> drivers.Driver:
    """The driver for the cloud node groups' GPU models (the image serves them all), or a site's servers'."""
    sw = cluster.software
    models = cluster.site_gpu_models(site) if site else cluster.cloud_gpu_models()
    what = f"servers of site {site}" if site else "cloud node groups"
    try:
        return drivers.select_driver(
            sw.nvidia_driver.branch, sw.nvidia_driver.flavour, models, sw.nvidia_driver.version
        )
    except ValueError as e:
        raise UserError(f"software.nvidia_driver: {e} (GPUs of the {what})") from None


def ami_name(cluster: Cluster, now: datetime | None = None) -> str:
    sw = cluster.software
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    driver = image_driver(cluster)
    return (
        f"{cluster.name}-gpu-worker-ubuntu{sw.ubuntu}-nvidia{driver.version}{driver.flavour[0]}"
        f"-cuda{sw.cuda}-k8s{cluster.kubernetes.version}-{stamp}"
    )


def check_region(cluster: Cluster, region: str) -> str:
    try:
        return cluster.region(region).name
    except KeyError as e:
        raise UserError(f"--region: {e.args[0]}") from None


def bake_instance_profile(cluster: Cluster) -> str:
    """The build instance's profile (terraform/modules/iam/image_bake.tf): reads the standard image, nothing else."""
    return f"{cluster.name}-image-bake"


def packer_variables(
    cluster: Cluster,
    region: str,
    *,
    ec2_endpoint: str = "",
    now=None,
    package_lock_path: str = "package-lock",
    ssh_source_cidrs: tuple[str, ...] = ("127.0.0.1/32",),
    prepull: bool = True,
) -> dict:
    """The values of packer/variables.pkr.hcl for a build in ``region`` (copied to the spec's other regions);
    ``prepull`` False: no standard image and no build instance profile (a fresh account's first bake)."""
    check_region(cluster, region)
    sw = cluster.software
    driver = image_driver(cluster)
    extras = hardware.image_components(cluster)
    return {
        "cluster": cluster.name,
        "region": region,
        "instance_type": BUILDER_INSTANCE_TYPE,
        "root_volume_gib": IMAGE_ROOT_GIB,  # one source: the Terraform check holds every root volume to it
        "ami_name": ami_name(cluster, now),
        "source_ami_name": source_ami_name(sw.ubuntu),
        "ec2_endpoint": ec2_endpoint,
        "ubuntu_version": sw.ubuntu,
        "nvidia_driver_branch": str(driver.branch),
        "nvidia_driver_flavour": driver.flavour,
        "nvidia_driver_package": driver.package,
        "nvidia_driver_version": driver.version,
        "nvidia_fabricmanager": "1" if "fabricmanager" in extras else "0",
        "efa_installer_version": sw.efa_installer if "efa" in extras else "",
        "efa_installer_key_fingerprint": drivers.stack_table()["efa_installer_key_fingerprint"],
        **{k: drivers.stack_table()[k] for k in SIGNING_KEYS},
        "expected_gpus": str(catalog.instance_type(BUILDER_INSTANCE_TYPE).gpus),
        "unattended_upgrades": "0",
        "ami_regions": [r for r in cluster.spill_over_order if r != region],
        "package_lock_path": package_lock_path,
        "cuda_version": sw.cuda,
        "containerd_version": sw.containerd,
        "nvidia_container_toolkit_version": sw.nvidia_container_toolkit,
        "kubernetes_version": cluster.kubernetes.version,
        "kubernetes_minor": cluster.kubernetes.minor,
        # pre-pulled and pinned by prepull-images.sh: a new node pulls only what a job adds to it. From the lab's
        # registry (researchers.registry or LAB_REGISTRY; refused while neither names it), read with the bake
        # instance's role (bake_instance_profile: ECR pulls of this one repository, terraform/modules/iam).
        "standard_image": lab_images.standard_image(cluster) if prepull else "",
        "bake_instance_profile": bake_instance_profile(cluster) if prepull else "",
        "ssh_source_cidrs": list(ssh_source_cidrs),
    }


def write_var_file(variables: dict, path: Path) -> Path:
    """``*.pkrvars.json``: Packer 1.6.6 and later read it with ``-var-file``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(variables, indent=2, sort_keys=True) + "\n")
    return path


CHECK_IP = "https://checkip.amazonaws.com"  # AWS's own what-is-my-address service


def ssh_source(text: str) -> str:
    """``--ssh-from``: one IPv4 address (or it as a /32), the only source Packer's temporary security group admits
    for SSH to the build instance; a range is refused (packer/variables.pkr.hcl checks the same)."""
    try:
        network = ipaddress.IPv4Network(text.strip() if "/" in text else f"{text.strip()}/32")
    except ValueError as e:
        raise UserError(
            f"--ssh-from {text}: not an IPv4 address ({e}); give the bake host's public address"
        ) from None
    if network.prefixlen != 32:
        raise UserError(
            f"--ssh-from {text}: a range, not one address; give the bake host's public address as a /32"
        )
    return str(network)


def bake_host_cidr(lookup=None) -> str:
    """The bake host's public address as a /32: Packer opens SSH to the build instance from it only (issue 26)."""
    try:
        text = lookup() if lookup else urllib.request.urlopen(CHECK_IP, timeout=10).read().decode()  # noqa: S310
        address = ipaddress.IPv4Address(text.strip())
    except (OSError, ValueError) as e:
        raise UserError(f"cannot tell this machine's public address from {CHECK_IP} ({e}); pass --ssh-from ADDRESS "
                        "(the address Packer's SSH to the build instance comes from)") from None  # fmt: skip
    return f"{address}/32"
