"""The volumes jobs mount, under one set of names wherever they run: the claims ``home``, ``datasets``,
``results`` in each researcher's namespace, statically bound to PersistentVolumes served by the EFS CSI driver
(``efs.csi.aws.com``) from the primary region's file system.

EFS is reached by its mount target addresses from every VPC (peered) and from the lab (site-to-site VPN), so the
same claim works in any region and on the lab's servers; the lab's NAS exports are offered besides as NFS volumes
(``lab-<export>``) for jobs pinned to the lab. Static binding (``storageClassName: ""`` and ``volumeName`` on the
claim, ``claimRef`` on the volume) keeps another namespace from ever binding a researcher's volume
(Kubernetes docs, "Reserving a PersistentVolume"). The requested size is required by the API and ignored by
EFS and NFS.
"""

from __future__ import annotations

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


def volumes(spec: Cluster, user: str, efs_id: str) -> list[dict]:
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
