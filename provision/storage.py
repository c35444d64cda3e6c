"""The volumes jobs mount, under one set of names wherever they run: the claims ``home``, ``datasets``,
``results`` in each researcher's namespace, statically bound to PersistentVolumes served by the EFS CSI driver
(``efs.csi.aws.com``) from the primary region's file system.

EFS is reached by a mount target's address (``volumeAttributes.mounttargetip``, the driver's cross-VPC mount)
from every VPC (peered) and from the lab (site-to-site VPN), so the same claim works in any region and on the
lab's servers; its DNS name resolves only inside the primary VPC. The cost of that choice: every node mounts
through the mount target of the primary region's first zone (cross-zone traffic for the others, and that zone's
health). The lab's NAS exports are offered besides as NFS volumes (``lab-<export>``) for jobs pinned to the lab. Static binding (``storageClassName: ""`` and ``volumeName`` on the
claim, ``claimRef`` on the volume) keeps another namespace from ever binding a researcher's volume
(Kubernetes docs, "Reserving a PersistentVolume"). The requested size is required by the API and ignored by
EFS and NFS.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from provision import checkout
from provision.errors import UserError
from provision.spec import Cluster

EFS_DRIVER = "efs.csi.aws.com"
SIZE = "1Ti"
# (volume, path on the file system, access mode); homes and results are per user, datasets shared read-only
LAYOUT = {
    "home": ("/home/{user}", "ReadWriteMany"),
    "datasets": ("/datasets", "ReadOnlyMany"),
    "results": ("/results/{user}", "ReadWriteMany"),
}


def volume_name(namespace: str, volume: str) -> str:
    return f"{namespace}-{volume}"


def claims(spec: Cluster, namespace: str, labels: dict[str, str]) -> list[dict]:
    out = []
    for vol in spec.researchers.volumes:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": vol, "namespace": namespace, "labels": labels},
                "spec": {
                    "accessModes": [LAYOUT[vol][1]],
                    "storageClassName": "",
                    "volumeName": volume_name(namespace, vol),
                    "resources": {"requests": {"storage": SIZE}},
                },
            }
        )
    return out


def volumes(spec: Cluster, user: str, efs_id: str, mount_target_ip: str) -> list[dict]:
    """The user's PersistentVolumes on EFS (``<fs-id>:<path>``, the driver's static subpath form)."""
    ns = spec.researchers.namespace(user)
    out = []
    for vol in spec.researchers.volumes:
        path, mode = LAYOUT[vol]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume_name(ns, vol), "labels": {"research.cluster/user": user}},
                "spec": {
                    "capacity": {"storage": SIZE},
                    "accessModes": [mode],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "claimRef": {"namespace": ns, "name": vol},
                    "mountOptions": ["tls"],
                    "csi": {
                        "driver": EFS_DRIVER,
                        "volumeHandle": f"{efs_id}:{path.format(user=user)}",
                        "readOnly": mode == "ReadOnlyMany",
                        "volumeAttributes": {"mounttargetip": mount_target_ip},
                    },
                },
            }
        )
    return out


def lab_volumes(spec: Cluster) -> list[dict]:
    """The lab NAS's exports as NFS volumes ``lab-<name>`` (ReadWriteMany), for jobs pinned to the lab."""
    nfs = spec.storage.nfs
    if nfs is None:
        return []
    server = next(s.ip for s in spec.site(nfs.site).servers if s.name == nfs.server)
    out = []
    for export in nfs.exports:
        name = f"{nfs.site}-{export.path.rstrip('/').rsplit('/', 1)[-1]}"
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "labels": {"research.cluster/site": nfs.site}},
                "spec": {
                    "capacity": {"storage": SIZE},
                    "accessModes": ["ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "mountOptions": ["nfsvers=4.1", "hard", "noatime"],
                    "nfs": {"server": server, "path": export.path},
                },
            }
        )
    return out


TEMPLATES = Path(__file__).resolve().parent.parent / "deploy" / "storage"
IMAGES = {
    "driver": "public.ecr.aws/efs-csi-driver/amazon/aws-efs-csi-driver:v2.1.12",
    "registrar": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0",
    "liveness": "registry.k8s.io/sig-storage/livenessprobe:v2.15.0",
}
_EFS_ID = re.compile(r"^fs-[0-9a-f]{8,40}$")


def check_efs(efs_id: str, mount_target_ip: str) -> None:
    if not _EFS_ID.match(efs_id or ""):
        raise UserError(
            f"--efs-id {efs_id!r}: expected a file system id like fs-0123456789abcdef0 (Terraform output efs_dns_name starts with it)"
        )
    try:
        ipaddress.IPv4Address(mount_target_ip)
    except ValueError:
        raise UserError(
            f"--mount-target-ip {mount_target_ip!r}: expected the IPv4 address of a mount target in the primary region"
        ) from None


def mount_target_ip(efs_id: str, region: str, zone: str | None = None) -> str:
    """The address of the file system's mount target in ``zone`` (default: the first zone that has one)."""
    import boto3

    targets = boto3.client("efs", region_name=region).describe_mount_targets(FileSystemId=efs_id)[
        "MountTargets"
    ]
    available = sorted(
        (t for t in targets if t.get("LifeCycleState") == "available"),
        key=lambda t: t["AvailabilityZoneName"],
    )
    chosen = [t for t in available if zone in (None, t["AvailabilityZoneName"])]
    if not chosen:
        raise UserError(f"{efs_id}: no available mount target{' in ' + zone if zone else ''} in {region}")
    return chosen[0]["IpAddress"]


def render_storage(spec: Cluster, efs_id: str, mount_target_ip: str) -> dict[str, list[dict]]:
    """Every storage manifest, by file name: the EFS CSI node plugin, each user's volumes, the lab's NFS volumes."""
    check_efs(efs_id, mount_target_ip)
    env = Environment(
        loader=FileSystemLoader(str(checkout.require(TEMPLATES))), undefined=StrictUndefined, autoescape=False
    )  # noqa: S701 - YAML
    driver = env.get_template("efs-csi-node.yaml.j2").render(images=IMAGES, region=spec.primary_region)
    return {
        "efs-csi-node.yaml": [d for d in yaml.safe_load_all(driver) if d],
        "volumes.yaml": [v for u in spec.users for v in volumes(spec, u.name, efs_id, mount_target_ip)],
        "lab-volumes.yaml": lab_volumes(spec),
    }


def write_storage(manifests: dict[str, list[dict]], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, docs in manifests.items():
        if not docs:
            continue
        path = out_dir / name
        path.write_text(
            "# Rendered by `invoke render-storage` from cluster.yaml; do not edit.\n"
            + yaml.safe_dump_all(docs, sort_keys=False)
        )
        written.append(path)
    return written
