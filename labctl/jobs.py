"""A researcher's job as Kubernetes objects: an Indexed Job, its headless Service and PodGroup.

- One pod per node (``--nodes``), each with ``--gpus`` GPUs (``nvidia.com/gpu`` in requests and limits, as
  extended resources require), CPU and memory in proportion (the simulator's per-GPU share, which every GPU node
  of the spec offers).
- ``completionMode: Indexed`` so each pod knows its rank (the Job controller sets the annotation and label
  ``batch.kubernetes.io/job-completion-index`` and the hostname ``<job>-<index>``); with more than one node a
  headless Service named like the Job (``spec.subdomain``) gives ``<job>-0.<job>`` for the rendezvous,
  publishing pods before they are ready so ranks find each other while starting.
- ``--gang``: the label ``scheduling.x-k8s.io/pod-group`` and a ``PodGroup`` (scheduler-plugins,
  ``minMember``) plus the annotation ``research.cluster/pod-group-size`` the autoscaler reads
  (docs/snapshot.md): nothing is launched until every member can be.
- Environment for torchrun and friends: MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK (from the completion index),
  NPROC_PER_NODE, WORLD_SIZE (all processes: nodes x GPUs), LOG_DIR (under the results volume).
- Volumes: the PersistentVolumeClaims ``home``, ``datasets`` and ``results`` of the researcher's namespace
  (``invoke add-user`` creates them; they resolve to EFS or the lab's NFS), and a memory-backed /dev/shm.
- ``backoffLimit: 0``: a distributed job whose rank fails is failed as a whole, never half-restarted.
- The pods run as the researcher's uid from the spec (``users``), so what they write to the shared homes and
  results belongs to the researcher, as on the SSH machines and the lab's NFS.

Names follow Kubernetes' rules (apimachinery validation): the Service name is a DNS-1035 label, and each pod's
hostname ``<job>-<index>`` must stay a DNS-1123 label of at most 63 characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clusterspec.names import (
    CPU_PER_GPU,
    MEMORY_GIB_PER_GPU,
    POD_GROUP_LABEL,
    POD_GROUP_SIZE_ANNOTATION,
    SITE_LABEL,
    USER_LABEL,
)
from clusterspec.names import GPU_RESOURCE as GPU
from clusterspec.names import JOB_INDEX_LABEL as INDEX_ANNOTATION
from clusterspec.names import REGION_KEY as REGION_LABEL
from labctl.errors import LabError
from labctl.settings import Settings

IMAGE_LABEL = "research.cluster/image"
TOOL_LABEL = "app.kubernetes.io/managed-by"
MASTER_PORT = 29500
TTL_AFTER_FINISHED_S = 7 * 24 * 3600
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MOUNTS = {"home": "/home/researcher", "datasets": "/datasets", "results": "/results"}


@dataclass(frozen=True)
class JobRequest:
    name: str
    namespace: str
    image: str
    command: list[str]
    gpus: int
    nodes: int = 1
    gang: bool = False
    region_pref: list[str] = field(default_factory=list)
    user: str = ""
    image_tag: str = ""


def check_request(req: JobRequest, settings: Settings) -> None:
    """Refuse what the cluster could never run, before anything is created: one line each."""
    if not req.command:
        raise LabError("no command: put it after `--`, e.g. lab submit --gpus 8 -- python train.py")
    unknown = [r for r in req.region_pref if r not in settings.places]
    if unknown:
        raise LabError(
            f"--region-pref: unknown region {unknown[0]!r}; the cluster has {', '.join(settings.places)}"
        )
    if req.nodes < 1:
        raise LabError(f"--nodes {req.nodes}: a job needs at least one node")
    if req.gpus < 1:
        raise LabError(f"--gpus {req.gpus}: give the GPUs per node, at least 1")
    most = settings.max_gpus_per_node(req.region_pref or None)
    if req.gpus > most:
        where = f" in {', '.join(req.region_pref)}" if req.region_pref else ""
        raise LabError(
            f"--gpus {req.gpus}: no node type{where} has more than {most} GPUs; "
            f"ask for at most {most} per node and more --nodes"
        )
    check_name(req.name, req.nodes)


def check_name(name: str, nodes: int = 1) -> None:
    longest = 63 - len(f"-{nodes - 1}")
    if not _DNS1035.match(name):
        raise LabError(
            f"--name {name!r}: Kubernetes needs lowercase letters, digits and '-', "
            "starting with a letter and ending with a letter or digit (e.g. resnet-lr3)"
        )
    if len(name) > longest:
        raise LabError(
            f"--name {name!r}: {len(name)} characters; at most {longest} so that pod hostnames "
            f"({name[:8]}...-{nodes - 1}) stay within 63"
        )


def default_name(root_name: str, tag: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", root_name.lower()).strip("-") or "job"
    if not stem[0].isalpha():
        stem = f"job-{stem}"
    return f"{stem[:40].rstrip('-')}-{tag[:6]}"


def _labels(req: JobRequest) -> dict[str, str]:
    labels = {TOOL_LABEL: "lab"}
    if req.user:
        labels[USER_LABEL] = req.user
    if req.image_tag:
        labels[IMAGE_LABEL] = req.image_tag[:63]
    return labels


def _env(req: JobRequest) -> list[dict]:
    master = f"{req.name}-0.{req.name}" if req.nodes > 1 else "localhost"
    return [
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": str(MASTER_PORT)},
        {"name": "NNODES", "value": str(req.nodes)},
        {
            "name": "NODE_RANK",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}},
        },
        {"name": "NPROC_PER_NODE", "value": str(req.gpus)},
        {"name": "WORLD_SIZE", "value": str(req.gpus * req.nodes)},
        {"name": "LOG_DIR", "value": f"{MOUNTS['results']}/{req.name}"},
        {"name": "LAB_JOB", "value": req.name},
        {"name": "HOME", "value": MOUNTS["home"]},  # the uid has no passwd entry in the image
    ]


def _affinity(req: JobRequest, settings: Settings) -> dict | None:
    if not req.region_pref:
        return None
    regions = [r for r in req.region_pref if r in {x.name for x in settings.spec.regions}]
    sites = [s for s in req.region_pref if s not in regions]
    terms = []
    if regions:
        terms.append({"key": REGION_LABEL, "operator": "In", "values": regions})
    required = [{"matchExpressions": [t]} for t in terms]
    if sites:
        required.append({"matchExpressions": [{"key": SITE_LABEL, "operator": "In", "values": sites}]})
    n = len(req.region_pref)
    preferred = [
        {
            "weight": max(1, 100 - 100 * i // n),
            "preference": {
                "matchExpressions": [
                    {"key": REGION_LABEL if p in regions else SITE_LABEL, "operator": "In", "values": [p]}
                ]
            },
        }
        for i, p in enumerate(req.region_pref)
    ]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": required},
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }
    }


def job_manifest(req: JobRequest, settings: Settings) -> dict:
    labels = _labels(req)
    pod_labels = dict(labels)
    pod_annotations: dict[str, str] = {}
    if req.gang:
        pod_labels[POD_GROUP_LABEL] = req.name
        pod_annotations[POD_GROUP_SIZE_ANNOTATION] = str(req.nodes)
    resources = {
        GPU: str(req.gpus),
        "cpu": str(req.gpus * CPU_PER_GPU),
        "memory": f"{req.gpus * MEMORY_GIB_PER_GPU}Gi",
    }
    volumes = [
        {"name": v, "persistentVolumeClaim": {"claimName": v}} for v in settings.spec.researchers.volumes
    ]
    volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
    mounts = [
        {"name": v, "mountPath": MOUNTS[v], **({"readOnly": True} if v == "datasets" else {})}
        for v in settings.spec.researchers.volumes
    ]
    mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    pod_spec: dict = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": req.image,
                "command": list(req.command),
                "env": _env(req),
                "resources": {"requests": dict(resources), "limits": {GPU: str(req.gpus)}},
                "volumeMounts": mounts,
                "ports": [{"name": "rendezvous", "containerPort": MASTER_PORT}],
            }
        ],
        "tolerations": settings.gpu_tolerations(),
        "volumes": volumes,
        "enableServiceLinks": False,
    }
    if req.nodes > 1:
        pod_spec["subdomain"] = req.name
    affinity = _affinity(req, settings)
    if affinity:
        pod_spec["affinity"] = affinity
    uid = settings.uid(req.user)
    if uid is not None:  # files on the shared homes and results belong to the researcher, as over SSH
        pod_spec["securityContext"] = {"runAsUser": uid, "runAsGroup": uid, "runAsNonRoot": True}
    template_meta: dict = {"labels": pod_labels}
    if pod_annotations:
        template_meta["annotations"] = pod_annotations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": req.name, "namespace": req.namespace, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": req.nodes,
            "parallelism": req.nodes,
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def owner(job: dict) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": False,
        "blockOwnerDeletion": False,
    }


def _owned_meta(req: JobRequest, owner_ref: dict | None) -> dict:
    """The metadata of an object that belongs to the job (owned by the Job once it exists)."""
    meta: dict = {"name": req.name, "namespace": req.namespace, "labels": _labels(req)}
    if owner_ref:
        meta["ownerReferences"] = [owner_ref]
    return meta


def service_manifest(req: JobRequest, owner_ref: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _owned_meta(req, owner_ref),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"batch.kubernetes.io/job-name": req.name},
            "ports": [{"name": "rendezvous", "port": MASTER_PORT, "targetPort": MASTER_PORT}],
        },
    }


def network_policy_manifest(req: JobRequest, owner_ref: dict | None = None) -> dict:
    """The job's pods reach each other on every port (rendezvous, NCCL/gloo): researchers' namespaces deny all
    other ingress (provision/tenancy.py, issue 26), so a multi-node job opens exactly its own pods to each other."""
    meta = _owned_meta(req, owner_ref)
    meta["name"] = f"{req.name}-rendezvous"
    selector = {"matchLabels": {"batch.kubernetes.io/job-name": req.name}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": {"podSelector": selector, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": selector}]}]},
    }  # fmt: skip


def podgroup_manifest(req: JobRequest, owner_ref: dict | None = None) -> dict:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": _owned_meta(req, owner_ref),
        "spec": {"minMember": req.nodes, "scheduleTimeoutSeconds": 24 * 3600},
    }
