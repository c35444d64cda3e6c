"""Generated snapshots (as JSON-shaped dicts) for the benchmark and the tests: groups from the instance table,
nodes as ``kubectl get nodes -o json`` items, pods as ``kubectl get pods -o json`` items, seeded and repeatable."""

from __future__ import annotations

import random

from autoscaler.core.names import BIND_COMPLETED_ANNOTATION, NODE_GROUP_LABEL
from clusterspec import catalog

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
NOW = "2025-01-31T12:00:00Z"
EARLIER = "2025-01-31T10:00:00Z"

# Ten group kinds per region: (suffix, instance type, priority)
GROUP_KINDS = [
    ("cpu", "m6i.2xlarge", 0),
    ("cpu-large", "m6i.8xlarge", 0),
    ("cpu-c", "c6i.4xlarge", 0),
    ("gpu-t4", "g4dn.xlarge", 20),
    ("gpu-t4x4", "g4dn.12xlarge", 15),
    ("gpu-a10gx4", "g5.12xlarge", 5),
    ("gpu-a10gx8", "g5.48xlarge", 5),
    ("gpu-v100x4", "p3.8xlarge", 10),
    ("gpu-v100x8", "p3.16xlarge", 10),
    ("gpu-a100x8", "p4d.24xlarge", 5),
]
REGIONS = {
    "us-west-2": ["us-west-2a", "us-west-2b", "us-west-2c"],
    "us-east-1": ["us-east-1a", "us-east-1b"],
    "us-east-2": ["us-east-2a"],
}


def group(
    name: str, region: str, itype: str, *, max_size: int = 100, desired: int = 0, priority: int = 0
) -> dict:
    info = catalog.instance_type(itype)
    g = {
        "name": name,
        "region": region,
        "zones": REGIONS.get(region, [f"{region}a"]),
        "instance_type": itype,
        "min": 0,
        "max": max_size,
        "desired": desired,
        "labels": {"research.cluster/pool": "gpu" if info.gpus else "cpu"},
        "taints": [GPU_TAINT] if info.gpus else [],
        "priority": priority,
        "instances": [],
    }
    if info.gpu_model:
        g["labels"]["research.cluster/gpu-model"] = info.gpu_model.lower()
    return g


def groups(kinds: int = 10, regions: list[str] | None = None, max_size: int = 2000) -> list[dict]:
    out = []
    for region in regions or list(REGIONS):
        for suffix, itype, prio in GROUP_KINDS[:kinds]:
            out.append(group(f"lab-{region}-{suffix}", region, itype, max_size=max_size, priority=prio))
    return out


def node(name: str, g: dict, instance_id: str, index: int = 0) -> dict:
    zone = g["zones"][index % len(g["zones"])] if g["zones"] else None
    alloc = catalog.instance_type(g["instance_type"]).allocatable()
    labels = dict(g["labels"], **{NODE_GROUP_LABEL: g["name"], "kubernetes.io/hostname": name})
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    return {
        "metadata": {"name": name, "labels": labels, "creationTimestamp": EARLIER},
        "spec": {"providerID": f"aws:///{zone}/{instance_id}", "taints": list(g["taints"])},
        "status": {
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": EARLIER}],
        },
    }


def pod(
    name: str,
    requests: dict,
    *,
    namespace: str = "lab",
    node_name: str | None = None,
    gpu: bool = False,
    labels: dict | None = None,
    selector: dict | None = None,
) -> dict:
    spec: dict = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
    if gpu:
        spec["tolerations"] = [GPU_TOLERATION]
    if selector:
        spec["nodeSelector"] = selector
    status = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": EARLIER}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
        "status": status,
    }


def shapes(count: int, rng: random.Random, gpu_share: float = 0.5) -> list[tuple[dict, bool]]:
    """``count`` distinct request shapes: (requests, needs a GPU toleration). At most about 2,900 exist."""
    out, seen = [], set()
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > 100 * count:
            raise ValueError(f"cannot draw {count} distinct shapes (about 2,900 exist); ask for fewer")
        if rng.random() < gpu_share:
            gpus = rng.choice([1, 1, 2, 4, 8])
            req = {
                "cpu": f"{rng.randint(1, 6) * gpus}",
                "memory": f"{rng.randint(4, 40) * gpus}Gi",
                "nvidia.com/gpu": str(gpus),
            }
        else:
            req = {"cpu": f"{rng.randint(1, 32) * 250}m", "memory": f"{rng.randint(1, 64) * 512}Mi"}
        key = tuple(sorted(req.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append((req, "nvidia.com/gpu" in req))
    return out


def snapshot(
    *,
    pods: int,
    shape_count: int,
    nodes: int,
    group_kinds: int = 10,
    seed: int = 1,
    gpu_share: float = 0.5,
    fill: int = 3,
    gang_size: int = 0,
    claims: int = 0,
) -> dict:
    """A burst: ``pods`` pending pods of ``shape_count`` shapes; ``nodes`` existing nodes spread over the groups,
    each running ``fill`` pods already. With ``gang_size``, consecutive pending pods form PodGroup gangs. With
    ``claims``, every pending pod mounts that many claims (home, datasets, results...), bound to EFS volumes, and
    the snapshot lists them (kube-scheduler's VolumeBinding, core/volumes.py)."""
    rng = random.Random(seed)
    gs = groups(group_kinds)
    items_nodes, bound = [], []
    for i in range(nodes):
        g = gs[i % len(gs)]
        iid = f"i-{i:08x}"
        name = f"node-{i}"
        g["instances"].append({"id": iid, "state": "InService", "launched_at": EARLIER})
        g["desired"] += 1
        g["max"] = max(g["max"], g["desired"])
        items_nodes.append(node(name, g, iid, i // len(gs)))
        gpu = bool(g["taints"])
        for j in range(fill):
            req = {"cpu": "1", "memory": "2Gi"} | ({"nvidia.com/gpu": "1"} if gpu else {})
            bound.append(pod(f"run-{i}-{j}", req, node_name=name, gpu=gpu))
    kinds = shapes(shape_count, rng, gpu_share)
    pending = []
    for i in range(pods):
        req, gpu = kinds[i % len(kinds)]
        labels = {"scheduling.x-k8s.io/pod-group": f"gang-{i // gang_size}"} if gang_size else None
        if gang_size:
            req, gpu = kinds[(i // gang_size) % len(kinds)]
        pending.append(pod(f"p-{i}", req, gpu=gpu, labels=labels))
    out = {"now": NOW, "regions": list(REGIONS), "groups": gs, "nodes": items_nodes, "pods": bound + pending}
    if claims:
        names = [f"claim-{k}" for k in range(claims)]
        for p in pending:
            p["spec"]["volumes"] = [{"name": n, "persistentVolumeClaim": {"claimName": n}} for n in names]
        out["persistentvolumeclaims"] = [
            {"metadata": {"name": n, "namespace": "lab", "annotations": {BIND_COMPLETED_ANNOTATION: "yes"}},
             "spec": {"storageClassName": "efs", "volumeName": f"efs-{n}"}, "status": {"phase": "Bound"}}
            for n in names
        ]  # fmt: skip
        out["persistentvolumes"] = [
            {"metadata": {"name": f"efs-{n}"}, "spec": {"storageClassName": "efs",
             "claimRef": {"namespace": "lab", "name": n}}, "status": {"phase": "Bound"}}
            for n in names
        ]  # fmt: skip
        out["storageclasses"] = [
            {"metadata": {"name": "efs"}, "provisioner": "efs.csi.aws.com", "volumeBindingMode": "Immediate"}
        ]
    return out
