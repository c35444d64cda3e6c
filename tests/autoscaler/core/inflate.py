"""Objects as a real API server returns them: the fields it adds to what was submitted (managedFields, env, volume
mounts, probes, images, status conditions, container statuses...), none of which the planner reads.

``pod(obj, i)`` / ``node(obj, i)`` / ``pdb(obj, i)`` return an inflated deep copy; nothing the planner reads
changes: a volume added is a configMap, secret, projected token or PVC (never hostPath or a disk emptyDir; in a
snapshot that lists claims, the PVC's claim is added bound to a volume any node can use, as an EFS one), no
host port, no annotation the code reads, node conditions only next to an existing Ready one. A typical training
pod comes out at 8-12 KiB of JSON (as ``kubectl get pod -o json`` prints a PyTorchJob worker).
"""

from __future__ import annotations

import copy

TIME = "2026-11-30T09:12:33Z"


def _fields(keys: list[str]) -> dict:
    """A managedFields fieldsV1 tree naming ``keys`` (the server's record of who set which field)."""
    return {"f:metadata": {"f:labels": {f"f:{k}": {} for k in keys}}, "f:spec": {f"f:{k}": {} for k in keys}}


def _managed(keys: list[str]) -> list[dict]:
    return [
        {
            "manager": m,
            "operation": op,
            "apiVersion": "v1",
            "time": TIME,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields(keys),
        }
        for m, op in (
            ("kube-controller-manager", "Update"),
            ("kubelet", "Update"),
            ("kube-scheduler", "Update"),
        )
    ]


def _env(i: int) -> list[dict]:
    env = [{"name": f"VAR_{k}", "value": f"value-{k}-of-the-training-configuration-{i}"} for k in range(24)]
    env += [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
        {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
        {"name": "MASTER_ADDR", "value": f"job-{i // 8}-master-0.job-{i // 8}.research.svc"},
    ]
    return env


def _probe(path: str) -> dict:
    return {
        "httpGet": {"path": path, "port": 8080, "scheme": "HTTP"},
        "initialDelaySeconds": 30,
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def _container(c: dict, i: int) -> None:
    c.setdefault("name", "main")
    c["image"] = f"123456789012.dkr.ecr.us-west-2.amazonaws.com/research/train:{i % 7}.{i % 13}"
    c["imagePullPolicy"] = "IfNotPresent"
    c["command"] = ["torchrun", "--nnodes", "8", "--nproc-per-node", "8", "train.py"]
    c["args"] = ["--config", "/etc/train/config.yaml", "--checkpoint-dir", "/mnt/ckpt", "--seed", str(i)]
    c["env"] = _env(i)
    c["volumeMounts"] = [
        {"name": "config", "mountPath": "/etc/train", "readOnly": True},
        {"name": "ckpt", "mountPath": "/mnt/ckpt"},
        {"name": "dshm", "mountPath": "/dev/shm"},
        {
            "name": "kube-api-access-x7k2p",
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True,
        },
    ]
    c["livenessProbe"] = _probe("/healthz")
    c["readinessProbe"] = _probe("/ready")
    c["terminationMessagePath"] = "/dev/termination-log"
    c["terminationMessagePolicy"] = "File"
    c["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
    }


_VOLUMES = [
    {"name": "config", "configMap": {"name": "train-config", "defaultMode": 420}},
    {"name": "ckpt", "persistentVolumeClaim": {"claimName": "checkpoints"}},
    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
    {
        "name": "kube-api-access-x7k2p",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    },
]


def pod(obj: dict, i: int = 0) -> dict:
    p = copy.deepcopy(obj)
    meta = p.setdefault("metadata", {})
    meta["uid"] = f"6f1c2a4e-{i:08d}-4b1e-9c55-0d2f8a7e{i % 10000:04d}"
    meta["resourceVersion"] = str(100000 + i)
    meta.setdefault("creationTimestamp", TIME)
    meta["generateName"] = f"{meta.get('name', 'pod')}-"
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        "kubectl.kubernetes.io/default-container": "main",
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
    }
    meta["managedFields"] = _managed(
        list(meta.get("labels") or {}) + ["containers", "volumes", "tolerations"]
    )
    spec = p.setdefault("spec", {})
    for c in spec.get("containers") or []:
        _container(c, i)
    for c in spec.get("initContainers") or []:
        _container(c, i)
    spec["volumes"] = list(spec.get("volumes") or []) + copy.deepcopy(_VOLUMES)
    spec.update(
        {
            "restartPolicy": "Never",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "trainer",
            "serviceAccount": "trainer",
            "schedulerName": "default-scheduler",
            "securityContext": {"fsGroup": 1000, "runAsUser": 1000},
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "hostname": f"worker-{i}",
            "subdomain": f"job-{i // 8}",
        }
    )
    status = p.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status["qosClass"] = "Burstable"
    bound = bool(spec.get("nodeName"))
    status["conditions"] = (
        [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": TIME}
         for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
        if bound
        else [{"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": TIME,
               "reason": "Unschedulable",
               "message": "0/3000 nodes are available: 3000 Insufficient nvidia.com/gpu. preemption: 0/3000 nodes "
               "are available: 3000 No preemption victims found for incoming pod."}]
    )  # fmt: skip
    if bound:
        status.update({"hostIP": "10.0.12.34", "podIP": "10.1.2.3", "podIPs": [{"ip": "10.1.2.3"}]})
        if status.get("phase") == "Running":
            status["containerStatuses"] = [
                {
                    "name": c.get("name", "main"),
                    "image": c.get("image", ""),
                    "imageID": "123456789012.dkr.ecr.us-west-2.amazonaws.com/research/train@sha256:"
                    + "ab" * 32,
                    "containerID": "containerd://" + "cd" * 32,
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": TIME}},
                    "lastState": {},
                }
                for c in spec.get("containers") or []
            ]
    return p


def node(obj: dict, i: int = 0) -> dict:
    n = copy.deepcopy(obj)
    meta = n.setdefault("metadata", {})
    meta["uid"] = f"8a2d{i:08d}-77aa-4c1e-8e0f-5b3c2d1e0f9a"
    meta["resourceVersion"] = str(500000 + i)
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        "alpha.kubernetes.io/provided-node-ip": "10.0.12.34",
        "csi.volume.kubernetes.io/nodeid": '{"ebs.csi.aws.com":"i-0abc"}',
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    meta["managedFields"] = _managed(list(meta.get("labels") or {}) + ["taints", "providerID", "podCIDR"])
    spec = n.setdefault("spec", {})
    spec["podCIDR"] = "10.1.2.0/24"
    spec["podCIDRs"] = ["10.1.2.0/24"]
    status = n.setdefault("status", {})
    conditions = status.get("conditions")
    if conditions and any(isinstance(c, dict) and c.get("type") == "Ready" for c in conditions):
        status["conditions"] = [
            {"type": t, "status": "False", "lastHeartbeatTime": TIME, "lastTransitionTime": TIME,
             "reason": f"KubeletHas{t}", "message": f"kubelet has no {t}"}
            for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
        ] + conditions  # fmt: skip
    status["addresses"] = [
        {"type": "InternalIP", "address": "10.0.12.34"},
        {"type": "Hostname", "address": f"ip-10-0-12-{i % 250}"},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {
        "architecture": "amd64", "bootID": f"b{i:07d}", "containerRuntimeVersion": "containerd://2.1.4",
        "kernelVersion": "6.12.0-1.amzn2023.x86_64", "kubeProxyVersion": "", "kubeletVersion": "v1.36.2",
        "machineID": f"ec2{i:029d}", "operatingSystem": "linux", "osImage": "Amazon Linux 2023", "systemUUID": f"ec2{i:05d}",
    }  # fmt: skip
    status["images"] = [
        {"names": [f"123456789012.dkr.ecr.us-west-2.amazonaws.com/research/train@sha256:{k:064x}",
                   f"123456789012.dkr.ecr.us-west-2.amazonaws.com/research/train:{k}"], "sizeBytes": 8_000_000_000 + k}
        for k in range(20)
    ]  # fmt: skip
    return n


def pdb(obj: dict, i: int = 0) -> dict:
    b = copy.deepcopy(obj)
    meta = b.setdefault("metadata", {})
    meta["uid"] = f"pdb-{i}"
    meta["managedFields"] = _managed(["selector", "minAvailable"])
    status = b.setdefault("status", {})
    status["conditions"] = [
        {"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods", "lastTransitionTime": TIME, "observedGeneration": 1, "message": ""}
    ]  # fmt: skip
    return b


def snapshot(data: dict) -> dict:
    """The snapshot with every pod, node and PDB inflated (lists or List objects)."""
    out = copy.deepcopy(data)
    for key, fn in (("pods", pod), ("nodes", node), ("pdbs", pdb)):
        items = _listed(out, key)
        if items is not None:
            items[:] = [fn(o, i) if isinstance(o, dict) else o for i, o in enumerate(items)]
    claims, volumes = _listed(out, "persistentvolumeclaims"), _listed(out, "persistentvolumes")
    if claims is not None:  # the added PVC volume's claim, bound (else the pods would wait for it)
        spaces = {(p.get("metadata") or {}).get("namespace") or "default" for p in _listed(out, "pods") or ()
                  if isinstance(p, dict) and isinstance(p.get("metadata"), dict)}  # fmt: skip
        for ns in sorted(spaces):
            volume = f"efs-checkpoints-{ns}"
            claims.append({
                "metadata": {"name": "checkpoints", "namespace": ns,
                             "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                "spec": {"storageClassName": "efs", "volumeName": volume, "accessModes": ["ReadWriteMany"]},
                "status": {"phase": "Bound"},
            })  # fmt: skip
            if volumes is not None:
                volumes.append({"metadata": {"name": volume},
                                "spec": {"storageClassName": "efs", "claimRef": {"namespace": ns, "name": "checkpoints"}},
                                "status": {"phase": "Bound"}})  # fmt: skip
    return out


def _listed(data: dict, key: str) -> list | None:
    items = data.get(key)
    if isinstance(items, dict) and isinstance(items.get("items"), list):
        items = items["items"]
    return items if isinstance(items, list) else None
