"""The volumes jobs mount, under one set of names wherever they run: the claims ``home``, ``datasets``,
``results`` in each researcher's namespace, statically bound to PersistentVolumes served by the EFS CSI driver
(``efs.csi.aws.com``) from the primary region's file system.

Each volume mounts through an access point (terraform/modules/efs): ``volumeHandle: <fs-id>::<fsap-id>``, the
driver's static form for access points, over TLS with IAM authorization (``mountOptions: [tls, iam,
region=<primary>]``; the file-system policy refuses anything else). A researcher's home and results access points
enforce their uid and gid and created the directories owned by them; ``datasets`` is shared and read-only in
jobs. The node plugin signs the mounts as the role ``<cluster>-efs-csi-node`` (IRSA: its ServiceAccount's
projected token, on cloud nodes and the lab's servers alike), the only principal the file-system policy lets
use the jobs' access points (issue 26: before, any client reaching a mount target could mount any researcher's).

The driver's efs-utils finds the file system by id (``<fs-id>.efs.<primary region>.amazonaws.com``, the region
from the ``region`` mount option, which efs-utils reads before its configuration file): in the primary
VPC Amazon's resolver answers with the mount target in the node's own zone; the other regions' VPCs answer it
from a private zone listing every mount target (terraform/modules/efs_peer_dns), and the lab's servers forward
the name to the Resolver inbound endpoint (the cookbook's dns_forwarding). The node plugin uses the node's
resolver (``dnsPolicy: Default``) so that answer is the node's own.

The lab's NAS exports are offered besides as NFS volumes (claims ``<site>-<export>``, each researcher's on their own
folder of the export) for jobs pinned to the lab. Static binding (``storageClassName: ""`` and ``volumeName`` on the claim, ``claimRef`` on the volume) keeps another
namespace from ever binding a researcher's volume (Kubernetes docs, "Reserving a PersistentVolume"). The
requested size is required by the API and ignored by EFS and NFS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import checkout, images

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


@dataclass(frozen=True)
class EfsVolumes:
    """The primary file system and the access points the volumes mount through (terraform/modules/efs)."""

    file_system_id: str
    access_points: dict[str, dict[str, str]]  # researcher -> {"home": fsap-..., "results": fsap-...}
    datasets: str

    def access_point(self, user: str, volume: str) -> str:
        return self.datasets if volume == "datasets" else self.access_points[user][volume]


def volumes(spec: Cluster, user: str, efs: EfsVolumes) -> list[dict]:
    """The user's PersistentVolumes on EFS, each through its access point (``<fs-id>::<fsap-id>``)."""
    ns = spec.researchers.namespace(user)
    out = []
    for vol in spec.researchers.volumes:
        _, mode = LAYOUT[vol]
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
                    # efs-utils takes the region from this option before its configuration file, which the
                    # driver fills from the node's own region (another region's nodes would look up a name
                    # that does not exist)
                    "mountOptions": ["tls", "iam", f"region={spec.primary_region}"],
                    "csi": {
                        "driver": EFS_DRIVER,
                        "volumeHandle": f"{efs.file_system_id}::{efs.access_point(user, vol)}",
                        "readOnly": mode == "ReadOnlyMany",
                    },
                },
            }
        )
    return out


# Of the NAS's exports, which is whose: a per-user export is mounted at its <path>/<user> (the user's own folder,
# as on the SSH machines and the lab's servers); datasets are shared and read-only.
LAB_SHARED_READ_ONLY = ("datasets",)


def _export_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def lab_claim_names(spec: Cluster) -> list[str]:
    """The claims ``<site>-<export>`` each researcher's namespace has for the lab NAS's exports."""
    nfs = spec.storage.nfs
    return [] if nfs is None else [f"{nfs.site}-{_export_name(e.path)}" for e in nfs.exports]


def lab_claims(spec: Cluster, namespace: str, labels: dict[str, str]) -> list[dict]:
    out = []
    for name in lab_claim_names(spec):
        shared = name.removeprefix(f"{spec.storage.nfs.site}-") in LAB_SHARED_READ_ONLY
        mode = "ReadOnlyMany" if shared else "ReadWriteMany"
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {
                    "accessModes": [mode],
                    "storageClassName": "",
                    "volumeName": volume_name(namespace, name),
                    "resources": {"requests": {"storage": SIZE}},
                },
            }
        )
    return out


def lab_volumes(spec: Cluster) -> list[dict]:
    """The lab NAS's exports as NFS volumes per researcher: ``<namespace>-<site>-<export>``, bound by ``claimRef`` to
    the claim ``<site>-<export>`` of that researcher's namespace alone, each on the researcher's own folder of the
    export (``<path>/<user>``; datasets shared and read-only), scheduled on the NAS's site only (the NAS exports to
    the site's servers, not to the VPCs: provision/chef/attributes.py)."""
    nfs = spec.storage.nfs
    if nfs is None:
        return []
    from clusterspec.names import SITE_LABEL

    server = next(s.ip for s in spec.site(nfs.site).servers if s.name == nfs.server)
    out = []
    for user in spec.users:
        ns = spec.researchers.namespace(user.name)
        for export in nfs.exports:
            base = _export_name(export.path)
            shared = base in LAB_SHARED_READ_ONLY
            claim = f"{nfs.site}-{base}"
            path = export.path.rstrip("/") if shared else f"{export.path.rstrip('/')}/{user.name}"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": volume_name(ns, claim),
                                 "labels": {"research.cluster/site": nfs.site, "research.cluster/user": user.name}},
                    "spec": {
                        "capacity": {"storage": SIZE},
                        "accessModes": ["ReadOnlyMany" if shared else "ReadWriteMany"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "storageClassName": "",
                        "claimRef": {"namespace": ns, "name": claim},
                        "mountOptions": ["nfsvers=4.1", "hard", "noatime"],
                        "nfs": {"server": server, "path": path, "readOnly": shared},
                        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                            {"key": SITE_LABEL, "operator": "In", "values": [nfs.site]}]}]}},
                    },
                }
            )  # fmt: skip
    return out


REPO = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent.parent / "deploy" / "storage"
IMAGES = {
    "driver": "public.ecr.aws/efs-csi-driver/amazon/aws-efs-csi-driver:v2.1.12",
    "registrar": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0",
    "liveness": "registry.k8s.io/sig-storage/livenessprobe:v2.15.0",
}
_EFS_ID = re.compile(r"^fs-[0-9a-f]{8,40}$")
_AP_ID = re.compile(r"^fsap-[0-9a-f]{8,40}$")


def _check_fs_id(efs_id: str) -> None:
    if not _EFS_ID.match(efs_id or ""):
        raise UserError(
            f"--efs-id {efs_id!r}: expected a file system id like fs-0123456789abcdef0 "
            "(the primary region's Terraform output efs_file_system_id)"
        )


def check_efs(spec: Cluster, efs: EfsVolumes) -> None:
    _check_fs_id(efs.file_system_id)
    wanted = [(u.name, v) for u in spec.users for v in ("home", "results") if v in spec.researchers.volumes]
    for user, vol in wanted:
        ap = efs.access_points.get(user, {}).get(vol)
        if ap is None:
            raise UserError(
                f"{efs.file_system_id}: no access point for {user}'s {vol} (/{vol}/{user}); apply the primary "
                "region's Terraform after adding a researcher to cluster.yaml (invoke up)"
            )
        if not _AP_ID.match(ap):
            raise UserError(f"{user}'s {vol} access point {ap!r}: expected an id like fsap-0123456789abcdef0")
    if "datasets" in spec.researchers.volumes and not _AP_ID.match(efs.datasets or ""):
        raise UserError(
            f"{efs.file_system_id}: no access point for /datasets; apply the primary region's Terraform (invoke up)"
        )


def lookup_access_points(spec: Cluster, efs_id: str, region: str) -> EfsVolumes:
    """The file system's access points as terraform/modules/efs makes them, found with DescribeAccessPoints:
    a researcher's ``/home/<name>`` and ``/results/<name>`` enforcing their uid, and ``/datasets`` without one."""
    import boto3
    import botocore.exceptions

    _check_fs_id(efs_id)
    pages = boto3.client("efs", region_name=region).get_paginator("describe_access_points")
    try:
        found = sorted(
            (ap for page in pages.paginate(FileSystemId=efs_id) for ap in page["AccessPoints"]),
            key=lambda ap: ap["AccessPointId"],
        )
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        # the access points are AWS's to say, whatever was given: one line, not botocore's traceback
        raise UserError(
            f"--efs-id {efs_id}: DescribeAccessPoints in {region} failed ({e}); the access points are read with "
            "your AWS credentials (aws sts get-caller-identity)"
        ) from None
    found = [ap for ap in found if ap.get("LifeCycleState") == "available"]

    def pick(path: str, uid: int | None) -> str | None:
        for ap in found:
            posix = ap.get("PosixUser")
            if ap.get("RootDirectory", {}).get("Path") == path and (posix or {}).get("Uid") == uid:
                return ap["AccessPointId"]
        return None

    by_user = {}
    for u in spec.users:
        aps = {v: pick(f"/{v}/{u.name}", u.uid) for v in ("home", "results")}
        by_user[u.name] = {v: ap for v, ap in aps.items() if ap}
    return EfsVolumes(efs_id, by_user, pick("/datasets", None) or "")


def csi_role_arn(path: Path | None = None) -> str:
    """``efs_csi_role_arn`` of the global root's outputs (``invoke up --region global`` writes them)."""
    import json

    path = path or REPO / "build" / "terraform" / "global" / "outputs.json"
    try:
        value = json.loads(path.read_text())["efs_csi_role_arn"]["value"]
    except FileNotFoundError:
        raise UserError(f"{path}: not found: the EFS CSI driver's role is an output of the global root; run "
                        "`invoke up --region global` first, or pass --csi-role-arn ARN") from None  # fmt: skip
    except (ValueError, KeyError, TypeError):
        raise UserError(
            f"{path}: no efs_csi_role_arn output; re-apply the global root (`invoke up --region global`)"
        ) from None
    if not re.fullmatch(r"arn:aws[\w-]*:iam::\d{12}:role/[\w+=,.@/-]+", str(value)):
        raise UserError(f"{path}: efs_csi_role_arn {value!r} is no IAM role ARN")
    return value


def render_storage(spec: Cluster, efs: EfsVolumes, csi_role_arn: str) -> dict[str, list[dict]]:
    """Every storage manifest, by file name: the EFS CSI node plugin (signing its mounts as ``csi_role_arn``), each
    user's volumes, the lab's NFS volumes."""
    check_efs(spec, efs)
    env = Environment(
        loader=FileSystemLoader(str(checkout.require(TEMPLATES))), undefined=StrictUndefined, autoescape=False
    )  # noqa: S701 - YAML
    from clusterspec.names import IRSA_AUDIENCE, IRSA_TOKEN_DIR

    driver = env.get_template("efs-csi-node.yaml.j2").render(images=IMAGES, region=spec.primary_region,
                                                             role_arn=csi_role_arn, token_dir=IRSA_TOKEN_DIR,
                                                             audience=IRSA_AUDIENCE)  # fmt: skip
    return {
        "efs-csi-node.yaml": images.pin_docs([d for d in yaml.safe_load_all(driver) if d], spec),
        "volumes.yaml": [v for u in spec.users for v in volumes(spec, u.name, efs)],
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
