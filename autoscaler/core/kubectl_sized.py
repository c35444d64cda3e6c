"""Pods and nodes at the size a real API server returns them (``kubectl get pods -o json``), made from the lean
generated ones (``generate.snapshot``) for the benchmarks (docs/benchmarks.md).

The lean objects carry only what the planner reads. Real ones carry much more, and every byte of it is parsed by
the JSON decoder and, unless the informers drop it, kept in memory. What is added here, and where it comes from:

- ``metadata``: uid, resourceVersion, creationTimestamp, generateName, the Job controller's labels and owner
  reference (pkg/controller/job: ``batch.kubernetes.io/controller-uid``, ``job-name``, ``job-completion-index``,
  both the prefixed and the legacy keys), a few team labels and annotations, and ``managedFields``: one entry per
  writer (kube-controller-manager creates the pod, kube-scheduler writes the PodScheduled condition, kubelet writes
  the status of a running pod; the node's writers are kubelet, kube-controller-manager and the cloud controller
  manager), each with its ``fieldsV1`` set as structured-merge-diff encodes it: ``f:<field>`` for struct fields,
  ``k:{"name":...}`` for the elements of associative lists (containers, env, volumes, ports keyed by
  containerPort and protocol, conditions keyed by type, volumeMounts keyed by mountPath), atomic lists (command,
  args, tolerations) as leaves (apimachinery ``meta/v1`` ``ManagedFieldsEntry``; sigs.k8s.io/structured-merge-diff
  ``fieldpath`` serialisation).
- ``spec``: the training container's image (an ECR digest tag), ``imagePullPolicy``, ``command``/``args`` as a
  torchrun launch, 26 environment variables (NCCL and launcher settings, the completion index and pod name from
  the downward API), a port, limits equal to requests for GPUs and memory, volume mounts, liveness and readiness
  probes with the API server's defaults filled in (pkg/apis/core/v1/defaults.go: timeoutSeconds 1, periodSeconds
  10, successThreshold 1, failureThreshold 3), a restricted security context, the termination-message defaults;
  volumes: the projected service-account token volume the ServiceAccount admission plugin adds
  (``kube-api-access-<5>``: token with expirationSeconds 3607, the ``kube-root-ca.crt`` ConfigMap, the namespace
  from the downward API), ``/dev/shm`` as an in-memory emptyDir (so it is no blocking local storage), a dataset
  PVC and a ConfigMap; pod-level defaults (dnsPolicy, enableServiceLinks, preemptionPolicy, restartPolicy,
  schedulerName, serviceAccount/serviceAccountName, terminationGracePeriodSeconds 30, securityContext) and the
  not-ready/unreachable NoExecute tolerations the DefaultTolerationSeconds admission plugin adds (300 s).
- ``status``: a pending pod has the PodScheduled=False/Unschedulable condition with the scheduler's message and
  its qosClass; a running pod has the five conditions kubelet writes, hostIP(s), podIP(s) and a containerStatus.
- Nodes: the labels kubelet and the AWS cloud controller manager set, the node annotations, podCIDR(s),
  ``status.capacity`` next to allocatable, the four kubelet conditions with heartbeats, addresses (InternalIP,
  InternalDNS, Hostname), daemonEndpoints, nodeInfo, runtimeHandlers and ``status.images``: 50 images, kubelet's
  default ``--node-status-max-images`` (pkg/kubelet/nodestatus/setters.go ``Images``), each with a digest and a
  tag name and its size.

Nothing added changes what the planner decides: fields it reads keep their lean values (requests, tolerations of
the group taints, priority, node allocatable, Ready and its transition time); ``tests/autoscaler/core/
test_kubectl_sized.py`` checks the plans are equal, that a sample passes ``kubernetes-validate --strict`` and
that the real kube-apiserver accepts them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import uuid

from autoscaler.core.names import NODE_GROUP_LABEL

KUBELET_VERSION = "v1.36.2"
ECR = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
DEFAULT_TOLERATIONS = [  # DefaultTolerationSeconds admission (plugin/pkg/admission/defaulttolerationseconds)
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
# associative lists and their keys (k8s.io/api core/v1 ``+listMapKey`` markers); other lists are atomic
LIST_KEYS = {
    "containers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "protocol"),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "containerStatuses": ("name",),
    "addresses": ("type",),
    "hostIPs": ("ip",),
    "podIPs": ("ip",),
}


def _uid(*parts: object) -> str:
    return str(uuid.UUID(hashlib.md5("/".join(map(str, parts)).encode()).hexdigest()))


def _sha(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


# structs that k8s.io/api marks ``+structType=atomic``: the field set names the struct, never its fields
# (kube-apiserver drops the children another writer lists)
ATOMIC = frozenset({"fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"})


def fields_v1(obj: object) -> dict:
    """The structured-merge-diff field set of ``obj`` (what ``managedFields[].fieldsV1`` holds)."""
    if not isinstance(obj, dict):
        return {}
    out: dict = {}
    for k, v in obj.items():
        if k in ATOMIC:
            out[f"f:{k}"] = {}
        elif isinstance(v, dict):
            out[f"f:{k}"] = {".": {}, **fields_v1(v)} if v else {}
        elif isinstance(v, list) and k in LIST_KEYS and v and all(isinstance(x, dict) for x in v):
            sub: dict = {}
            for item in v:
                key = {f: item[f] for f in LIST_KEYS[k] if f in item}
                sub[f"k:{json.dumps(key, separators=(',', ':'))}"] = {".": {}, **fields_v1(item)}
            out[f"f:{k}"] = sub
        else:
            out[f"f:{k}"] = {}
    return out


def _entry(manager: str, at: str, fields: dict, subresource: str | None = None) -> dict:
    e = {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
         "operation": "Update", "time": at}  # fmt: skip
    if subresource:
        e["subresource"] = subresource
    return e


def _env(job: str, index: int, world: int) -> list[dict]:
    fixed = {
        "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1", "NCCL_P2P_LEVEL": "NVL",
        "NCCL_ASYNC_ERROR_HANDLING": "1", "NCCL_NSOCKS_PERTHREAD": "4",
        "TORCH_DISTRIBUTED_DEBUG": "OFF", "OMP_NUM_THREADS": "8",
        "PYTHONUNBUFFERED": "1", "HF_HOME": "/data/cache/huggingface", "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "offline", "WANDB_PROJECT": "dlr-research",
        "MASTER_ADDR": f"{job}-0.{job}", "MASTER_PORT": "29500",
        "WORLD_SIZE": str(world), "NNODES": str(max(1, world // 8)), "NPROC_PER_NODE": "8",
        "CHECKPOINT_DIR": f"/data/checkpoints/{job}", "DATASET_DIR": "/data/datasets/imagenet-1k",
        "LOG_LEVEL": "INFO", "AWS_REGION": "us-west-2",
        "RUN_ID": f"{job}-{_sha(job)[:8]}",
    }  # fmt: skip
    env = [{"name": k, "value": v} for k, v in fixed.items()]
    env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})  # fmt: skip
    env.append(
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}
    )
    env.append({"name": "NODE_RANK", "value": str(index)})
    return env


def _mounts(token: str) -> list[dict]:
    return [
        {"mountPath": "/dev/shm", "name": "dshm"},
        {"mountPath": "/data", "name": "data"},
        {"mountPath": "/etc/train", "name": "config", "readOnly": True},
        {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": token, "readOnly": True},
    ]


def _probe(kind: str) -> dict:
    base = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    if kind == "liveness":
        return {"exec": {"command": ["/bin/sh", "-c", "test -f /tmp/healthy"]}, "initialDelaySeconds": 60,
                **base}  # fmt: skip
    return {"tcpSocket": {"port": 29500}, "initialDelaySeconds": 10, **base}


def pod(lean: dict, index: int, rng: random.Random, owner: bool = True) -> dict:
    """The pod ``lean`` as the API server returns it (a new dict; ``lean`` is not changed). What ``lean`` has
    wins over what is added; ``owner``: a pod without owner references gets its Job's."""
    p = copy.deepcopy(lean)
    meta, spec = p["metadata"], p["spec"]
    status = p.setdefault("status", {})
    name, ns = meta["name"], meta.get("namespace", "default")
    job = f"train-{name.rsplit('-', 1)[0]}-{index // 8}"
    job_uid = _uid("job", ns, job)
    created = meta.get("creationTimestamp") or f"2025-01-31T11:58:{index % 60:02d}Z"
    meta.update(
        uid=meta.get("uid") or _uid("pod", ns, name),
        resourceVersion=meta.get("resourceVersion") or str(1_000_000 + index),
        creationTimestamp=created,
        generateName=f"{job}-{index % 8}-",
    )
    meta["labels"] = {
        "batch.kubernetes.io/controller-uid": job_uid,
        "batch.kubernetes.io/job-name": job,
        "batch.kubernetes.io/job-completion-index": str(index % 8),
        "controller-uid": job_uid,
        "job-name": job,
        "app.kubernetes.io/name": "trainer",
        "app.kubernetes.io/part-of": "dlr-research",
        "research.cluster/user": f"user{rng.randint(1, 300):03d}",
        "research.cluster/team": f"team-{rng.randint(1, 40):02d}",
        **(meta.get("labels") or {}),
    }
    meta["annotations"] = {
        "batch.kubernetes.io/job-completion-index": str(index % 8),
        "kubectl.kubernetes.io/default-container": "main",
        "research.cluster/git-commit": _sha("commit", job)[:40],
        "research.cluster/submitted-by": "labctl/0.9.3",
        **(meta.get("annotations") or {}),
    }
    if not meta.get("ownerReferences") and owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "blockOwnerDeletion": True, "controller": True,
                                    "kind": "Job", "name": job, "uid": job_uid}]  # fmt: skip
    token = f"kube-api-access-{_sha(name)[:5]}"
    main = spec["containers"][0]
    requests = (main.get("resources") or {}).get("requests") or {}
    limits = (main.get("resources") or {}).get("limits") or {
        r: q for r, q in requests.items() if r in ("nvidia.com/gpu", "memory")
    }
    mounts = [*(main.get("volumeMounts") or []), *_mounts(token)]
    added = dict(
        image=f"{ECR}/dlr/research:{_sha('image', index % 12)[:16]}",
        imagePullPolicy="IfNotPresent",
        command=["torchrun"],
        args=[
            "--nnodes=$(NNODES)",
            "--nproc-per-node=$(NPROC_PER_NODE)",
            "--node-rank=$(NODE_RANK)",
            "--rdzv-backend=c10d",
            "--rdzv-endpoint=$(MASTER_ADDR):$(MASTER_PORT)",
            "train.py",
            "--config=/etc/train/config.yaml",
            "--output=$(CHECKPOINT_DIR)",
            "--seed=1234",
        ],  # fmt: skip
        env=_env(job, index % 8, 8),
        ports=[{"containerPort": 29500, "name": "c10d", "protocol": "TCP"}],
        resources={**(main.get("resources") or {}), **({"limits": limits} if limits else {})},
        livenessProbe=_probe("liveness"),
        readinessProbe=_probe("readiness"),
        securityContext={
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },  # fmt: skip
        terminationMessagePath="/dev/termination-log",
        terminationMessagePolicy="File",
    )
    main.update({**added, **{k: v for k, v in main.items() if k != "resources"}}, volumeMounts=mounts)
    tolerations = spec.get("tolerations") or []
    added = dict(
        dnsPolicy="ClusterFirst",
        enableServiceLinks=True,
        hostname=f"{job}-{index % 8}",
        subdomain=job,
        preemptionPolicy="PreemptLowerPriority",
        priority=spec.get("priority", 0),
        restartPolicy="Never",
        schedulerName="default-scheduler",
        securityContext={"fsGroup": 1000, "runAsGroup": 1000},
        serviceAccount="trainer",
        serviceAccountName="trainer",
        terminationGracePeriodSeconds=spec.get("terminationGracePeriodSeconds", 30),
        tolerations=[*tolerations, *(t for t in DEFAULT_TOLERATIONS if t not in tolerations)],
        volumes=[
            *(spec.get("volumes") or []),
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": DATA_CLAIM}},
            {"name": "config", "configMap": {"defaultMode": 420, "name": f"{job}-config"}},
            {
                "name": token,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                "name": "kube-root-ca.crt",
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace",
                                    }
                                ]
                            }
                        },
                    ],
                },
            },
        ],  # fmt: skip
    )
    simple = set(spec) <= SIMPLE_SPEC and len(spec["containers"]) == 1
    spec.update({**added, **{k: v for k, v in spec.items() if k not in ("tolerations", "volumes")}})
    qos = "Guaranteed" if limits and set(limits) == set(requests) else "Burstable"
    created_fields = {"f:metadata": _meta_fields(meta), "f:spec": _spec_fields(spec, token, simple)}
    entries = [_entry("kube-controller-manager", created, created_fields)]
    node_name = spec.get("nodeName")
    if not node_name:
        message = ("0/3000 nodes are available: 1000 Insufficient nvidia.com/gpu, 2000 node(s) had untolerated "
                   "taint {nvidia.com/gpu: present}. preemption: 0/3000 nodes are available: 3000 No preemption "
                   "victims found for incoming pod.")  # fmt: skip
        cond = {"lastProbeTime": None, "lastTransitionTime": created, "message": message,
                "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}  # fmt: skip
        status.update(phase=status.get("phase", "Pending"), conditions=[cond], qosClass=qos)
        entries.append(
            _entry(
                "kube-scheduler",
                created,
                _memo(("sched",), lambda: {"f:status": fields_v1({"conditions": [cond]})}),
                "status",
            )
        )
    else:
        started = status.get("startTime") or created
        host_ip = f"10.{index % 250}.{(index // 250) % 250}.{index % 200 + 10}"
        pod_ip = f"100.64.{(index // 250) % 250}.{index % 250}"
        kubelet_status = dict(
            conditions=[
                {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": t}
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],  # fmt: skip
            containerStatuses=[
                {
                    "containerID": f"containerd://{_sha('ctr', name)}",
                    "image": main["image"],
                    "imageID": f"{ECR}/dlr/research@sha256:{_sha('digest', index % 12)}",
                    "lastState": {},
                    "name": "main",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": started}},
                    "volumeMounts": [
                        dict(m, **({"recursiveReadOnly": "Disabled"} if m.get("readOnly") else {}))
                        for m in main["volumeMounts"]
                    ],
                }
            ],  # fmt: skip
            hostIP=host_ip,
            hostIPs=[{"ip": host_ip}],
            podIP=pod_ip,
            podIPs=[{"ip": pod_ip}],
            qosClass=qos,
        )
        status.update({k: v for k, v in kubelet_status.items() if k not in status})  # what the pod has wins
        kubelet = {k: v for k, v in status.items() if k not in ("phase", "qosClass")}
        ips = (host_ip, pod_ip)
        key = (
            "kubelet",
            tuple(kubelet),
            tuple(str(c.get("name")) for c in kubelet.get("containerStatuses") or ()),
        )
        fields = _memo(key, lambda: {"f:status": fields_v1(kubelet)})
        fields = _renamed(
            fields, ("f:status", "f:hostIPs"), {"k:" + json.dumps({"ip": ips[0]}): {".": {}, "f:ip": {}}}
        )
        fields = _renamed(
            fields, ("f:status", "f:podIPs"), {"k:" + json.dumps({"ip": ips[1]}): {".": {}, "f:ip": {}}}
        )
        entries.append(_entry("kubelet", started, fields, "status"))
    meta["managedFields"] = entries
    return p


_MEMO: dict = {}
SIMPLE_SPEC = {"containers", "tolerations", "nodeSelector", "nodeName", "priority"}  # generate.pod's fields
TOKEN = "kube-api-access-xxxxx"


def _memo(key: tuple, make):
    """Field sets depend on an object's keys, not its values: computed once per structure and shared (never
    mutated), which keeps generating 50,000 pods to seconds."""
    got = _MEMO.get(key)
    if got is None:
        got = _MEMO[key] = make()
    return got


def _renamed(fields: dict, path: tuple[str, ...], items: dict) -> dict:
    """``fields`` with the associative list at ``path`` replaced by ``items`` (copied along the path only)."""
    out = dict(fields)
    if len(path) == 1:
        out[path[0]] = items
    else:
        out[path[0]] = _renamed(fields[path[0]], path[1:], items)
    return out


def _meta_fields(meta: dict) -> dict:
    labels, notes, owners = meta["labels"], meta["annotations"], meta.get("ownerReferences")
    base = _memo(("meta", tuple(labels), tuple(notes)),
                 lambda: fields_v1({"generateName": "", "labels": labels, "annotations": notes}))  # fmt: skip
    return {**base, **fields_v1({"ownerReferences": owners})} if owners else base


def _spec_fields(spec: dict, token: str, simple: bool) -> dict:
    if not simple:  # a hand-written pod (a case file): its own field set
        return fields_v1({k: v for k, v in spec.items() if k != "nodeName"})
    main = spec["containers"][0]
    res = main.get("resources") or {}
    key = ("spec", tuple(spec), tuple(res.get("requests") or ()), tuple(res.get("limits") or ()),
           len(spec.get("tolerations") or ()), tuple(spec.get("nodeSelector") or ()))  # fmt: skip

    def make() -> dict:
        shown = {k: v for k, v in spec.items() if k != "nodeName"}
        shown["volumes"] = [dict(v, name=TOKEN) if v["name"] == token else v for v in spec["volumes"]]
        return fields_v1(shown)

    fields = _memo(key, make)
    vols = dict(fields["f:volumes"])
    vols[f'k:{{"name":"{token}"}}'] = vols.pop(f'k:{{"name":"{TOKEN}"}}')
    return {**fields, "f:volumes": vols}


def _images(rng: random.Random) -> list[dict]:
    names = ["dlr/research", "dlr/eval", "dlr/notebook", "nvidia/cuda", "pytorch/pytorch", "nvidia/k8s-device-plugin",
             "nvidia/dcgm-exporter", "eks/kube-proxy", "amazon-k8s-cni", "amazon-k8s-cni-init", "eks/pause",
             "ebs-csi-driver/aws-ebs-csi-driver", "eks/csi-node-driver-registrar", "eks/livenessprobe",
             "fluent/fluent-bit", "prometheus/node-exporter"]  # fmt: skip
    out = []
    for i in range(50):  # kubelet's default --node-status-max-images
        repo = names[i % len(names)]
        tag = f"v{i // len(names) + 1}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        out.append({"names": [f"{ECR}/{repo}@sha256:{_sha(repo, tag)}", f"{ECR}/{repo}:{tag}"],
                    "sizeBytes": rng.randint(5_000_000, 18_000_000_000)})  # fmt: skip
    return sorted(out, key=lambda im: -im["sizeBytes"])  # kubelet lists the largest first


def node(lean: dict, index: int, rng: random.Random, itype: str | None = None) -> dict:
    """The node ``lean`` as the API server returns it (a new dict; ``lean`` is not changed)."""
    n = copy.deepcopy(lean)
    meta, spec, status = n["metadata"], n.setdefault("spec", {}), n.setdefault("status", {})
    name = meta["name"]
    labels = meta.setdefault("labels", {})
    zone = labels.get("topology.kubernetes.io/zone", "us-west-2a")
    region = zone[:-2] if zone[-2:-1] == "-" else zone[:-1]  # us-west-2a -> us-west-2, lab-a -> lab
    itype = labels.get("node.kubernetes.io/instance-type") or itype
    created = meta.get("creationTimestamp") or "2025-01-31T10:00:00Z"
    heartbeat = f"2025-01-31T11:59:{index % 60:02d}Z"
    ip = f"10.{index % 250}.{(index // 250) % 250}.{index % 200 + 10}"
    dns = f"ip-{ip.replace('.', '-')}.{region}.compute.internal"
    added = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux", "topology.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/region": region, "failure-domain.beta.kubernetes.io/zone": zone,
        "topology.k8s.aws/zone-id": f"usw2-az{index % 3 + 1}", "k8s.io/cloud-provider-aws": _sha("cluster")[:32],
        "research.cluster/ami": "dlr-gpu-2026.11.2",
    }  # fmt: skip
    labels.update({k: v for k, v in added.items() if k not in labels})  # what the node has wins
    if itype:
        labels.setdefault("node.kubernetes.io/instance-type", itype)
        labels.setdefault("beta.kubernetes.io/instance-type", itype)
    meta.update(
        uid=meta.get("uid") or _uid("node", name),
        resourceVersion=meta.get("resourceVersion") or str(2_000_000 + index),
        creationTimestamp=meta.get("creationTimestamp"),  # only as it was (the age decides node states)
        annotations={
            "alpha.kubernetes.io/provided-node-ip": ip,
            "csi.volume.kubernetes.io/nodeid": json.dumps(
                {"ebs.csi.aws.com": spec.get("providerID", "")[-19:]}
            ),
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            **(meta.get("annotations") or {}),
        },
    )
    if meta["creationTimestamp"] is None:
        del meta["creationTimestamp"]
    cidr = f"100.{64 + index // 65536}.{(index // 256) % 256}.0/24"
    spec.update(podCIDR=cidr, podCIDRs=[cidr])
    alloc = status.get("allocatable") or {}
    status["capacity"] = {
        "ephemeral-storage": "524275692Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "pods": "110",
        **(status.get("capacity") or alloc),
    }  # fmt: skip  (allocatable stays as it is)
    pressure = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    conditions = [{"lastHeartbeatTime": heartbeat, "lastTransitionTime": created, "message": m, "reason": r,
                   "status": "False", "type": t} for t, r, m in pressure
                  if not any(c.get("type") == t for c in status.get("conditions") or [])]  # fmt: skip
    for c in status.get("conditions") or []:
        c = dict(c)
        c.setdefault("lastHeartbeatTime", heartbeat)
        if c.get("type") == "Ready" and c.get("status") == "True":
            c.setdefault("reason", "KubeletReady")
            c.setdefault("message", "kubelet is posting ready status")
        conditions.append(c)
    if status.get("conditions"):  # a node listed without any is taken as Ready: it stays without
        status["conditions"] = conditions
    status.update(
        addresses=[
            {"address": ip, "type": "InternalIP"},
            {"address": dns, "type": "InternalDNS"},
            {"address": dns, "type": "Hostname"},
        ],  # fmt: skip
        daemonEndpoints={"kubeletEndpoint": {"Port": 10250}},
        images=_images(rng),
        nodeInfo={
            "architecture": "amd64",
            "bootID": _uid("boot", name),
            "containerRuntimeVersion": "containerd://2.1.4",
            "kernelVersion": "6.12.40-63.114.amzn2023.x86_64",
            "kubeProxyVersion": KUBELET_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "machineID": _sha("machine", name)[:32],
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2023.9.20251110",
            "systemUUID": _uid("system", name),
        },  # fmt: skip
        runtimeHandlers=[
            {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}, "name": h}
            for h in ("nvidia", "runc", "")
        ],  # fmt: skip
    )
    kubelet_meta = {"annotations": {k: meta["annotations"][k] for k in ("alpha.kubernetes.io/provided-node-ip",
                    "volumes.kubernetes.io/controller-managed-attach-detach")},
                    "labels": {k: v for k, v in labels.items() if not k.startswith(("research.", "k8s.io/"))}}  # fmt: skip
    meta["managedFields"] = [
        _entry("kubelet", created, {"f:metadata": fields_v1(kubelet_meta), "f:spec": fields_v1({"providerID": 1})}),
        _entry("kube-controller-manager", created, {
            "f:metadata": fields_v1({"annotations": {"node.alpha.kubernetes.io/ttl": "0"}}),
            "f:spec": fields_v1({"podCIDR": cidr, "podCIDRs": [cidr], "taints": spec.get("taints") or []})}),
        _entry("aws-cloud-controller-manager", created, {"f:metadata": fields_v1({"labels": {
            k: labels[k] for k in labels if k.startswith(("topology.", "failure-domain.", "node.kubernetes.io/"))}})}),
        _entry("kubelet", heartbeat, {"f:status": fields_v1({k: status[k] for k in status if k in (
            "allocatable", "capacity", "conditions", "daemonEndpoints", "images", "nodeInfo", "runtimeHandlers")})},
            "status"),
    ]  # fmt: skip
    return n


DATA_CLAIM = "research-data"  # the claim every pod names: its dataset, on EFS


def data_claim(namespace: str) -> tuple[dict, dict]:
    """The claim every pod names in ``namespace``, bound, and its volume (EFS: no node affinity), as the API server
    returns them (the PV controller's annotations, the claim's status)."""
    volume = f"pvc-{_uid('pvc', namespace, DATA_CLAIM)}"
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": DATA_CLAIM, "namespace": namespace, "uid": _uid("pvc", namespace, DATA_CLAIM),
            "resourceVersion": "4242", "creationTimestamp": "2025-01-30T09:00:00Z",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
                            "volume.beta.kubernetes.io/storage-provisioner": "efs.csi.aws.com",
                            "volume.kubernetes.io/storage-provisioner": "efs.csi.aws.com"},
            "finalizers": ["kubernetes.io/pvc-protection"],
        },
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "5Ti"}},
                 "storageClassName": "efs", "volumeMode": "Filesystem", "volumeName": volume},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"], "capacity": {"storage": "5Ti"}},
    }  # fmt: skip
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume, "uid": _uid("pv", volume), "resourceVersion": "4241",
                     "annotations": {"pv.kubernetes.io/provisioned-by": "efs.csi.aws.com"},
                     "finalizers": ["kubernetes.io/pv-protection"]},
        "spec": {"accessModes": ["ReadWriteMany"], "capacity": {"storage": "5Ti"},
                 "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": DATA_CLAIM,
                              "namespace": namespace, "uid": claim["metadata"]["uid"]},
                 "csi": {"driver": "efs.csi.aws.com", "volumeHandle": "fs-0123456789abcdef0::fsap-0abc"},
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "efs", "volumeMode": "Filesystem"},
        "status": {"phase": "Bound"},
    }  # fmt: skip
    return claim, pv


def with_data_claims(snap: dict) -> dict:
    """A copy of ``snap`` whose claims (when it lists any) include the pods' :data:`DATA_CLAIM` in each of their
    namespaces, bound, and whose volumes (when it lists any) their volumes: the planner then plans as before."""
    out = dict(snap)
    if out.get("persistentvolumeclaims") is None:
        return out
    spaces = sorted({(p.get("metadata") or {}).get("namespace") or "default" for p in out.get("pods") or ()})
    made = [data_claim(ns) for ns in spaces]
    out["persistentvolumeclaims"] = _listed(out["persistentvolumeclaims"]) + [c for c, _ in made]
    if out.get("persistentvolumes") is not None:
        out["persistentvolumes"] = _listed(out["persistentvolumes"]) + [v for _, v in made]
    return out


def _listed(value: object) -> list:
    return list(value["items"] if isinstance(value, dict) else value)


def snapshot(lean: dict, seed: int = 1) -> dict:
    """A copy of the generated snapshot ``lean`` with every pod and node at kubectl size; groups unchanged."""
    rng = random.Random(seed)
    out = dict(lean)
    types = {g["name"]: g.get("instance_type") for g in lean.get("groups") or []}
    out["nodes"] = [
        node(n, i, rng, types.get(n["metadata"].get("labels", {}).get(NODE_GROUP_LABEL)))
        for i, n in enumerate(lean.get("nodes") or [])
    ]
    out["pods"] = [pod(p, i, rng) for i, p in enumerate(lean.get("pods") or [])]
    return with_data_claims(out)


def sizes(data: dict) -> dict[str, int]:
    """Mean compact-JSON bytes per pod and per node of a snapshot."""

    def mean(objs: list) -> int:
        return round(sum(len(json.dumps(o, separators=(",", ":"))) for o in objs) / len(objs)) if objs else 0

    return {"pod_bytes": mean(data.get("pods") or []), "node_bytes": mean(data.get("nodes") or [])}
