"""The Kubernetes objects the model makes: Nodes, DaemonSet pods, pod statuses, Events (kubectl's shape)."""

from __future__ import annotations

import copy

from autoscaler.catalog import instance_types
from autoscaler.interfaces import NODE_GROUP_LABEL
from autoscaler.model.clock import iso
from autoscaler.model.cloud import Instance

KUBELET_VERSION = "v1.31.4"


def node_name(inst: Instance) -> str:
    return f"ip-{inst.private_ip.replace('.', '-')}.{inst.region}.compute.internal"


def node_object(inst: Instance, group: dict, now: float) -> dict:
    """The Node an instance of ``group`` (snapshot format) registers as, Ready."""
    name = node_name(inst)
    itype = instance_types().get(inst.instance_type)
    capacity = dict(group["allocatable"])
    if itype is not None:
        capacity.update(cpu=str(itype.vcpu), memory=f"{int(itype.memory_gib * 1024 * 1024)}Ki")
    labels = {
        **group.get("labels", {}),
        NODE_GROUP_LABEL: group["name"],
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/region": inst.region,
        "topology.kubernetes.io/zone": inst.zone,
        "node.kubernetes.io/instance-type": inst.instance_type,
    }
    t = iso(now)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {}},
        "spec": {"providerID": f"aws:///{inst.zone}/{inst.id}"},
        "status": {
            "capacity": capacity,
            "allocatable": dict(group["allocatable"]),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": t,
                    "lastTransitionTime": t,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": inst.private_ip},
                {"type": "Hostname", "address": name},
                {"type": "InternalDNS", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "containerRuntimeVersion": "containerd://1.7.24",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "Ubuntu 22.04.5 LTS",
                "kernelVersion": "6.8.0-1019-aws",
                "machineID": inst.id,
                "systemUUID": inst.id,
                "bootID": inst.id,
            },
        },
    }
    if group.get("taints"):
        node["spec"]["taints"] = copy.deepcopy(group["taints"])
    return node


def daemon_pod(ds: dict, node: dict) -> dict | None:
    """The DaemonSet's pod for ``node`` (bound to it), or None when its node selector excludes the node."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    spec = template.get("spec") or {}
    labels = node["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return None
    meta = template.get("metadata") or {}
    ds_meta = ds["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{ds_meta['name']}-{node['metadata']['name'].split('.')[0]}",
            "namespace": ds_meta.get("namespace", "default"),
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": ds_meta["name"],
                    "uid": ds_meta.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {**spec, "nodeName": node["metadata"]["name"]},
    }


def running_status(pod: dict, node: dict | None, t: str) -> dict:
    """A bound pod's status: Running, Ready, its containers started at ``t``."""
    addresses = (node or {}).get("status", {}).get("addresses", [])
    host_ip = next((a["address"] for a in addresses if a["type"] == "InternalIP"), "")
    ready = {"status": "True", "lastProbeTime": None, "lastTransitionTime": t}
    return {
        "phase": "Running",
        "hostIP": host_ip,
        "podIP": host_ip,
        "startTime": t,
        "qosClass": pod["status"].get("qosClass", "Burstable"),
        "conditions": [
            {"type": "PodScheduled", **ready},
            {"type": "Initialized", **ready},
            {"type": "ContainersReady", **ready},
            {"type": "Ready", **ready},
        ],
        "containerStatuses": [
            {
                "name": c.get("name", "main"),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": t}},
            }
            for c in pod["spec"].get("containers") or ()
        ],
    }


def unschedulable_condition(message: str, t: str) -> dict:
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": t,
    }


def finish_status(status: dict, phase: str, reason: str, message: str, t: str) -> None:
    """Turn a pod's status into Succeeded or Failed (containers terminated at ``t``), in place."""
    started = status.get("startTime") or t
    status["phase"] = phase
    if phase == "Failed":
        status["reason"], status["message"] = reason, message
        status.setdefault("conditions", []).append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": t,
            }  # fmt: skip
        )
    for cond in status.get("conditions") or ():
        if cond["type"] in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="PodCompleted", lastTransitionTime=t)
    exit_code = 0 if phase == "Succeeded" else 137
    for cs in status.get("containerStatuses") or ():
        cs.update(ready=False, started=False)
        cs["state"] = {
            "terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": t}
        }


def event_object(obj: dict, name: str, reason: str, message: str, type: str, t: str) -> dict:  # noqa: A002
    """A core/v1 Event about ``obj`` from the autoscaler."""
    meta = obj["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": meta.get("namespace") or "default"},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", "Pod"),
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
        },
        "reason": reason,
        "message": message,
        "type": type,
        "count": 1,
        "firstTimestamp": t,
        "lastTimestamp": t,
        "source": {"component": "research-autoscaler"},
        "reportingComponent": "research-autoscaler",
    }
