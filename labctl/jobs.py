"""A researcher's job as Kubernetes objects: an Indexed Job, and for more than one node its headless Service (and
PodGroup for a gang, deepspeed's hostfile ConfigMap for deepspeed).

- One pod per node (``--nodes``; required pod anti-affinity on the hostname keeps two on different nodes), each
  with ``--gpus`` GPUs (``nvidia.com/gpu`` in requests and limits, as extended
  resources require), CPU and memory in proportion (the per-GPU share every GPU node of the cluster offers).
- ``completionMode: Indexed``: each pod's node rank is its completion index (the Job controller sets the annotation
  and label ``batch.kubernetes.io/job-completion-index`` and the hostname ``<job>-<index>``); with more than one node
  a headless Service named like the Job (``spec.subdomain``) gives ``<job>-0.<job>`` for the rendezvous, publishing
  pods before they are ready so ranks find each other while starting.
- A gang (``--gang``, the default for more than one node): the pods name the gang scheduler (``schedulerName``, the
  scheduler-plugins build with Coscheduling, docs/scheduler.md) and carry the label ``scheduling.x-k8s.io/pod-group``
  of a ``PodGroup`` with ``minMember`` = nodes, plus the annotation ``research.cluster/pod-group-size`` the autoscaler
  reads (docs/snapshot.md): no member is bound until every member can be. The default scheduler never binds them.
- The code runs where it lives: an init container unpacks the job's code snapshot (content-addressed in the cluster's
  bucket, labctl/unpack.py) into ``/workspace``, an ``emptyDir`` the job's uid owns, which is the working directory:
  what the code writes next to itself (``out/``, ``runs/``, checkpoints) works, and lasts as long as the pod;
  ``$LOG_DIR`` (``/results/<job>``, the results volume) is where results persist.
- The environment of a PyTorchJob (labctl/launchers.py): ``PET_NNODES``, ``PET_NODE_RANK``, ``PET_NPROC_PER_NODE``,
  ``PET_MASTER_ADDR``, ``PET_MASTER_PORT`` for plain ``torchrun train.py``; ``MASTER_ADDR``, ``MASTER_PORT``,
  ``NNODES``, ``NODE_RANK``, ``NPROC_PER_NODE``, ``WORLD_SIZE`` (nodes x GPUs) for scripts; ``TF_CONFIG`` for
  TensorFlow's multi-worker strategy; ``LOG_DIR``; ``--env K=V`` last (it wins).
- Hardware: ``--gpu-type`` and ``--spot`` choose among the cluster's GPU node types (required node affinity on the
  groups' ``research.cluster/node-group`` label or the servers' hostnames, the spot groups' taints tolerated only with
  ``--spot``); a multi-node job whose every candidate type has EFA requests ``vpc.amazonaws.com/efa`` (all of the
  node's interfaces) and gets the NCCL EFA environment of the standard image.
- Failures (``podFailurePolicy``, batch/v1): a pod with the ``DisruptionTarget`` condition (node lost, spot reclaimed,
  evicted, preempted) is counted and replaced, up to ``--retries`` times per node (``backoffLimit``); any container
  exiting non-zero otherwise fails the Job at once (``FailJob``): an application error is never retried.
- Pods pass Pod Security ``restricted``: the researcher's uid (``runAsNonRoot``), no privilege escalation, every
  capability dropped, seccomp ``RuntimeDefault``. What they write to the shared homes and results is the researcher's.
- Volumes: the PersistentVolumeClaims ``home``, ``datasets`` and ``results`` of the researcher's namespace (``invoke
  add-user``), a memory-backed /dev/shm and the ``/workspace`` emptyDir.

Names follow Kubernetes' rules (apimachinery validation): the Service name is a DNS-1035 label, and each pod's
hostname ``<job>-<index>`` must stay a DNS-1123 label of at most 63 characters.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from clusterspec.lab_settings import NodeType
from clusterspec.names import (
    CPU_PER_GPU,
    EFA_RESOURCE,
    HOSTNAME_KEY,
    MEMORY_GIB_PER_GPU,
    NODE_GROUP_LABEL,
    POD_GROUP_LABEL,
    POD_GROUP_SIZE_ANNOTATION,
    SITE_LABEL,
    USER_LABEL,
)
from clusterspec.names import GPU_RESOURCE as GPU
from clusterspec.names import JOB_INDEX_LABEL as INDEX_ANNOTATION
from clusterspec.names import REGION_KEY as REGION_LABEL
from clusterspec.scheduler import POD_GROUP_API
from labctl import launchers
from labctl.errors import LabError
from labctl.launchers import MASTER_PORT
from labctl.settings import Settings, gpu_type_key

CODE_LABEL = "research.cluster/code"
TOOL_LABEL = "app.kubernetes.io/managed-by"
GIT_ANNOTATION = "research.cluster/git"
GPU_TYPE_ANNOTATION = "research.cluster/gpu-type"  # --gpu-type as asked, for lab status
REGION_PREF_ANNOTATION = "research.cluster/region-pref"  # --region-pref as asked, for lab status
TTL_AFTER_FINISHED_S = 7 * 24 * 3600
DEFAULT_RETRIES = 3
WORKSPACE = "/workspace"
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")  # apimachinery IsEnvVarName
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
    code_tag: str = ""  # the snapshot's content hash
    code_url: str | None = None  # s3://... of the snapshot; None: the code is in the image already
    code_sha256: str = ""
    gpu_type: str | None = None
    spot: bool = False
    env: tuple[tuple[str, str], ...] = ()
    retries: int = DEFAULT_RETRIES
    git: str = ""  # "<commit>" or "<commit>+dirty", for the record
    s3_endpoint: str | None = None  # a local cluster's moto server, for the init container
    # what the job installs in its own venv when it starts (labctl/jobenv.py): pip install argument lists, e.g.
    # ("-r", "requirements.txt") for requirements no image was built for, ("-e", ".") for a package
    install: tuple[tuple[str, ...], ...] = ()
    no_build_isolation: bool = False  # the image has the project's build requirements
    keep: tuple[str, ...] = ()  # paths next to the code copied to $LOG_DIR when the command ends (--keep)
    python: str = "3.11"


# --- checks ---------------------------------------------------------------------------------------------------
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
    if req.retries < 0:
        raise LabError(f"--retries {req.retries}: give how often a disrupted node is replaced, 0 or more")
    for path in req.keep:
        parts = path.strip("/").split("/")
        if path.startswith("/") or ".." in parts or ":" in path or not path.strip("/."):
            raise LabError(
                f"--keep {path!r}: give a path inside the code's folder, where the command writes it (e.g. out)"
            )
    for k, _ in req.env:
        if not _ENV_NAME.match(k):
            raise LabError(
                f"--env {k}=...: {k!r} is not an environment variable name (letters, digits, '_', '-', '.')"
            )
    most = settings.max_gpus_per_node(req.region_pref or None)
    if req.gpus > most:
        where = f" in {', '.join(req.region_pref)}" if req.region_pref else ""
        raise LabError(
            f"--gpus {req.gpus}: no node type{where} has more than {most} GPUs; "
            f"ask for at most {most} per node and more --nodes"
        )
    candidates(req, settings)  # --gpu-type and --spot name something that exists
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


def default_name(root_name: str, tag: str, nodes: int = 1) -> str:
    """``<folder>-<code hash>-<random>``: the same code submitted twice (a sweep) gets two names."""
    stem = re.sub(r"[^a-z0-9-]+", "-", root_name.lower()).strip("-") or "job"
    if not stem[0].isalpha():
        stem = f"job-{stem}"
    suffix = f"-{tag[:6]}-{secrets.token_hex(2)}"
    return f"{stem[: 63 - len(f'-{nodes - 1}') - len(suffix)].rstrip('-')}{suffix}"


def parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LabError(f"--env {item!r}: give KEY=VALUE, e.g. --env LR=3e-4")
        out.append((key, value))
    return tuple(out)


# --- where it may run ----------------------------------------------------------------------------------------------
def candidates(req: JobRequest, settings: Settings) -> list[NodeType]:
    """The node types the job may land on: in the preferred places, of the GPU type, spot only with --spot, big
    enough; one line when none is left."""
    types = [t for t in settings.node_types if not req.region_pref or t.where in req.region_pref]
    if req.gpu_type:
        want = gpu_type_key(req.gpu_type)
        typed = [t for t in types if t.gpu_model and gpu_type_key(t.gpu_model).startswith(want)]
        if not typed:
            have = sorted({t.gpu_model for t in types if t.gpu_model})
            where = f" in {', '.join(req.region_pref)}" if req.region_pref else ""
            raise LabError(
                f"--gpu-type {req.gpu_type}: no such GPUs{where}; the cluster has {', '.join(have)}"
            )
        types = typed
    spot = [t for t in types if t.spot == req.spot]
    if not spot:
        have = sorted({t.gpu_model or "?" for t in types})
        what = "spot" if req.spot else "on-demand"
        hint = "drop --spot" if req.spot else "add --spot"
        raise LabError(f"--spot: no {what} nodes with {', '.join(have)} GPUs; {hint}")
    fit = [t for t in spot if t.gpus >= req.gpus]
    if not fit:
        most = max(t.gpus for t in spot)
        raise LabError(
            f"--gpus {req.gpus}: the chosen nodes ({', '.join(sorted({t.gpu_model or '?' for t in spot}))}) have at "
            f"most {most} GPUs; ask for at most {most} per node and more --nodes"
        )
    return fit


def _chosen(req: JobRequest) -> bool:
    """Whether the job names its hardware (then the affinity lists the groups and servers, not the places)."""
    return bool(req.gpu_type or req.spot)


def _affinity(req: JobRequest, settings: Settings, types: list[NodeType]) -> dict | None:
    if not req.region_pref and not _chosen(req):
        return None
    regions = set(settings.regions)
    if _chosen(req):
        groups = sorted(t.name for t in types if t.kind == "group")
        servers = sorted(t.name for t in types if t.kind == "server")
        required = []
        if groups:
            required.append(
                {"matchExpressions": [{"key": NODE_GROUP_LABEL, "operator": "In", "values": groups}]}
            )
        if servers:
            required.append(
                {"matchExpressions": [{"key": HOSTNAME_KEY, "operator": "In", "values": servers}]}
            )
    else:
        in_regions = [r for r in req.region_pref if r in regions]
        sites = [s for s in req.region_pref if s not in regions]
        required = []
        if in_regions:
            required.append(
                {"matchExpressions": [{"key": REGION_LABEL, "operator": "In", "values": in_regions}]}
            )
        if sites:
            required.append({"matchExpressions": [{"key": SITE_LABEL, "operator": "In", "values": sites}]})
    out: dict = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": required}}
    n = len(req.region_pref)
    if n:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": max(1, 100 - 100 * i // n),
                "preference": {"matchExpressions": [
                    {"key": REGION_LABEL if p in regions else SITE_LABEL, "operator": "In", "values": [p]}
                ]},
            }
            for i, p in enumerate(req.region_pref)
        ]  # fmt: skip
    return {"nodeAffinity": out}


def _tolerations(types: list[NodeType]) -> list[dict]:
    seen: dict[tuple, dict] = {}
    for t in types:
        for key, value, effect in t.taints:
            tol = {"key": key, "operator": "Equal", "value": value, "effect": effect}
            if not value:
                tol = {"key": key, "operator": "Exists", "effect": effect}
            seen.setdefault((key, value, effect), tol)
    return list(seen.values())


def efa_devices(req: JobRequest, types: list[NodeType]) -> int:
    """EFA devices each pod requests: all of a node's, for a multi-node job whose every candidate has them."""
    if req.nodes < 2 or not types or any(t.efa == 0 for t in types):
        return 0
    return min(t.efa for t in types)


# --- the objects --------------------------------------------------------------------------------------------------
def _labels(req: JobRequest) -> dict[str, str]:
    labels = {TOOL_LABEL: "lab"}
    if req.user:
        labels[USER_LABEL] = req.user
    if req.code_tag:
        labels[CODE_LABEL] = req.code_tag[:63]
    return labels


def _index_env(name: str) -> dict:
    return {
        "name": name,
        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}},
    }


def environment(req: JobRequest, launch: launchers.Launch, efa: dict[str, str]) -> list[dict]:
    master = f"{req.name}-0.{req.name}" if req.nodes > 1 else "localhost"
    env = [
        {"name": "LAB_JOB", "value": req.name},
        _index_env("NODE_RANK"),
        {"name": "NNODES", "value": str(req.nodes)},
        {"name": "NPROC_PER_NODE", "value": str(req.gpus)},
        {"name": "WORLD_SIZE", "value": str(req.gpus * req.nodes)},
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": str(MASTER_PORT)},
        # torchrun's own names for its options (PyTorchJob's setPodEnv): plain `torchrun train.py` needs no flags
        {"name": "PET_NNODES", "value": str(req.nodes)},
        _index_env("PET_NODE_RANK"),
        {"name": "PET_NPROC_PER_NODE", "value": str(req.gpus)},
        {"name": "PET_MASTER_ADDR", "value": master},
        {"name": "PET_MASTER_PORT", "value": str(MASTER_PORT)},
        {"name": "PYTHONUNBUFFERED", "value": "1"},  # lines reach `lab logs` as they are printed
        {"name": "LOG_DIR", "value": f"{MOUNTS['results']}/{req.name}"},
        {"name": "HOME", "value": MOUNTS["home"]},  # the uid has no passwd entry in the image
    ]
    if req.nodes > 1:
        env.append({"name": "TF_CONFIG", "value": launchers.tf_config(req.name, req.nodes)})
    env += launch.env
    env += [{"name": k, "value": v} for k, v in efa.items()]
    for key, value in req.env:  # --env last, and in place of lab's own entry of that name
        env = [e for e in env if e["name"] != key]
        env.append({"name": key, "value": value})
    return env


def _restricted() -> dict:
    """A container's part of Pod Security ``restricted`` (pod-security-admission policy package)."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def init_container(req: JobRequest) -> dict:
    script = _script("unpack.py")
    env = [
        {"name": "LAB_CODE_URL", "value": req.code_url},
        {"name": "LAB_CODE_SHA256", "value": req.code_sha256},
        {"name": "LAB_CODE_DIR", "value": WORKSPACE},
        {"name": "HOME", "value": "/tmp"},
    ]
    if req.s3_endpoint:
        env.append({"name": "AWS_ENDPOINT_URL_S3", "value": req.s3_endpoint})
    return {
        "name": "code",
        "image": req.image,
        "command": ["python3", "-c", script],
        "env": env,
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
        "volumeMounts": [{"name": "workspace", "mountPath": WORKSPACE}],
        "securityContext": _restricted(),
        "terminationMessagePolicy": "FallbackToLogsOnError",  # its last lines in the pod's status
    }


JOB_VENV = f"{WORKSPACE}/.lab/venv"


def _script(module: str) -> str:
    from importlib import resources

    return resources.files("labctl").joinpath(module).read_text()


def deps_container(req: JobRequest, home_mount: dict | None, datasets_mount: dict | None = None) -> dict:
    """The job's own venv, the image's packages visible in it, and the project installed in it as its README says
    (labctl/jobenv.py): pip's cache on the home volume, so the next start reuses what was fetched; /datasets
    (read-only) for a wheelhouse there (``--env PIP_FIND_LINKS=/datasets/wheels``)."""
    import json

    mounts = [{"name": "workspace", "mountPath": WORKSPACE}]
    mounts += [m for m in (home_mount, datasets_mount) if m]
    env = [
        {"name": "LAB_VENV", "value": JOB_VENV},
        {"name": "LAB_CODE_DIR", "value": WORKSPACE},
        {"name": "LAB_INSTALL", "value": json.dumps([list(s) for s in req.install])},
        {"name": "HOME", "value": MOUNTS["home"] if home_mount else "/tmp"},
        {"name": "PIP_CACHE_DIR", "value": f"{MOUNTS['home'] if home_mount else '/tmp'}/.cache/pip"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    if req.no_build_isolation:
        env.append({"name": "LAB_NO_BUILD_ISOLATION", "value": "1"})
    # pip's own settings given with --env (a private index, a wheelhouse on /datasets) reach the installs too
    env += [{"name": k, "value": v} for k, v in req.env if k.startswith("PIP_")]
    return {
        "name": "deps",
        "image": req.image,
        "command": ["python3", "-c", _script("jobenv.py")],
        "workingDir": WORKSPACE,
        "env": env,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
        "volumeMounts": mounts,
        "securityContext": _restricted(),
        "terminationMessagePolicy": "FallbackToLogsOnError",  # pip's last lines in the pod's status (lab status)
    }


def entry_command(command: list[str]) -> list[str]:
    """The main container's command behind labctl/entry.py: the job's venv on PATH, the output teed to $LOG_DIR."""
    return ["python3", "-c", _script("entry.py"), *command]


def job_manifest(req: JobRequest, settings: Settings, launch: launchers.Launch | None = None) -> dict:
    launch = launch or launchers.adapt(req.command, req.name, req.nodes, req.gpus)
    types = candidates(req, settings)
    efa = efa_devices(req, types)
    labels = _labels(req)
    pod_labels = dict(labels)
    pod_annotations: dict[str, str] = {}
    if req.gang:
        pod_labels[POD_GROUP_LABEL] = req.name
        pod_annotations[POD_GROUP_SIZE_ANNOTATION] = str(req.nodes)
    requests = {
        GPU: str(req.gpus),
        "cpu": str(req.gpus * CPU_PER_GPU),
        "memory": f"{req.gpus * MEMORY_GIB_PER_GPU}Gi",
    }
    limits = {GPU: str(req.gpus)}
    if efa:
        requests[EFA_RESOURCE] = limits[EFA_RESOURCE] = str(efa)
    volumes = [{"name": v, "persistentVolumeClaim": {"claimName": v}} for v in settings.volumes]
    volumes += [{"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "workspace", "emptyDir": {}}]
    mounts = [
        {"name": v, "mountPath": MOUNTS[v], **({"readOnly": True} if v == "datasets" else {})}
        for v in settings.volumes
    ]
    mounts += [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "workspace", "mountPath": WORKSPACE}]
    if launch.hostfile is not None:
        volumes.append({"name": "hostfile", "configMap": {"name": hostfile_name(req.name)}})
        mounts.append({"name": "hostfile", "mountPath": launchers.HOSTFILE_DIR, "readOnly": True})
    main = {
        "name": "main",
        "image": req.image,
        "command": entry_command(list(launch.command)),
        "workingDir": WORKSPACE,
        "env": environment(req, launch, settings.efa_env if efa else {}),
        "resources": {"requests": requests, "limits": limits},
        "volumeMounts": mounts,
        "ports": [{"name": "rendezvous", "containerPort": MASTER_PORT}],
        "securityContext": _restricted(),
        "terminationMessagePolicy": "FallbackToLogsOnError",  # a failure's last lines in the pod's status
    }
    pod_spec: dict = {
        "restartPolicy": "Never",
        "containers": [main],
        "tolerations": _tolerations(types),
        "volumes": volumes,
        "enableServiceLinks": False,
    }
    if req.code_url:  # the code, then the job's venv with the project installed as its README says
        home = next((m for m in mounts if m["name"] == "home"), None)
        datasets = next((m for m in mounts if m["name"] == "datasets"), None)
        pod_spec["initContainers"] = [init_container(req), deps_container(req, home, datasets)]
        main["env"].append({"name": "LAB_VENV", "value": JOB_VENV})
    if req.keep:
        main["env"].append({"name": "LAB_KEEP", "value": ":".join(p.strip("/") for p in req.keep)})
    if req.gang:
        pod_spec["schedulerName"] = settings.gang_scheduler
    if req.nodes > 1:
        pod_spec["subdomain"] = req.name
    affinity = _affinity(req, settings, types) or {}
    if req.nodes > 1:  # --nodes means nodes: never two of the job's pods on one
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": req.name}},
            "topologyKey": HOSTNAME_KEY,
        }]}  # fmt: skip
    if affinity:
        pod_spec["affinity"] = affinity
    uid = settings.uid(req.user)
    if uid is None:
        raise LabError(
            f"user {req.user!r} has no uid in the cluster's settings ({settings.source}); "
            f"ask your admin to add you to users: and run `invoke add-user {req.user or 'NAME'}`"
        )
    # files on the shared homes and results belong to the researcher, as over SSH; restricted Pod Security; the
    # researcher's own group alone (Strict: none from the image's /etc/group), as the tenant policy demands
    pod_spec["securityContext"] = {"runAsUser": uid, "runAsGroup": uid, "runAsNonRoot": True,
                                   "supplementalGroupsPolicy": "Strict",
                                   "seccompProfile": {"type": "RuntimeDefault"}}  # fmt: skip
    template_meta: dict = {"labels": pod_labels}
    if pod_annotations:
        template_meta["annotations"] = pod_annotations
    meta: dict = {"name": req.name, "namespace": req.namespace, "labels": labels}
    notes = {GIT_ANNOTATION: req.git, GPU_TYPE_ANNOTATION: req.gpu_type or "",
             REGION_PREF_ANNOTATION: ",".join(req.region_pref)}  # fmt: skip
    if any(notes.values()):
        meta["annotations"] = {k: v for k, v in notes.items() if v}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "completionMode": "Indexed",
            "completions": req.nodes,
            "parallelism": req.nodes,
            # each disruption may fail every member of a gang once: --retries replacements per node
            "backoffLimit": req.retries * req.nodes,
            "podFailurePolicy": {
                "rules": [
                    {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                    {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}},
                ]
            },  # fmt: skip
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


def _owned_meta(req: JobRequest, owner_ref: dict | None, name: str | None = None) -> dict:
    """The metadata of an object that belongs to the job (owned by the Job once it exists)."""
    meta: dict = {"name": name or req.name, "namespace": req.namespace, "labels": _labels(req)}
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
            "ports": [
                {"name": "rendezvous", "port": MASTER_PORT, "targetPort": MASTER_PORT},
                {"name": "tf-worker", "port": launchers.TF_PORT, "targetPort": launchers.TF_PORT},
            ],
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
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": _owned_meta(req, owner_ref),
        "spec": {"minMember": req.nodes, "scheduleTimeoutSeconds": 24 * 3600},
    }


def hostfile_name(job: str) -> str:
    return f"{job}-hostfile"


def hostfile_manifest(req: JobRequest, text: str, owner_ref: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _owned_meta(req, owner_ref, hostfile_name(req.name)),
        "data": {"hostfile": text},
    }


def manifests(req: JobRequest, settings: Settings) -> list[dict]:
    """Every object of the job, in creation order (the Job first; the others get its ownerReference)."""
    launch = launchers.adapt(req.command, req.name, req.nodes, req.gpus)
    docs = [job_manifest(req, settings, launch)]
    if req.nodes > 1:
        docs.append(service_manifest(req))
        # the job's pods reach each other in a default-deny namespace (issue 26)
        docs.append(network_policy_manifest(req))
    if req.gang:
        docs.append(podgroup_manifest(req))
    if launch.hostfile is not None:
        docs.append(hostfile_manifest(req, launch.hostfile))
    return docs
