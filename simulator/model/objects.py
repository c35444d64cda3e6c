"""The Kubernetes objects the model makes: Nodes, DaemonSet pods, pod statuses, Events (kubectl's shape)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from clusterspec.catalog import instance_types
from clusterspec.names import NODE_GROUP_LABEL
from simulator.model.clock import iso
from simulator.model.cloud import Instance
from simulator.model.daemons import pod_tolerations
from simulator.model.taints import NOT_READY, UNINITIALIZED, UNREACHABLE

KUBELET_VERSION = "v1.35.8"  # the kubelet version the model's nodes report
NETWORK_NOT_READY = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)
# The kubelet's conditions (pkg/kubelet/nodestatus/setters.go): type, reason when healthy, message when healthy
PRESSURE = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def node_name(inst: Instance) -> str:
    return f"ip-{inst.private_ip.replace('.', '-')}.{inst.region}.compute.internal"


def node_conditions(ready: bool, t: str) -> list[dict]:
    """The kubelet's four conditions at registration (``ready=False``: the network plugin is not up yet)."""
    out = [
        {
            "type": kind,
            "status": "False",
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": t,
            "lastTransitionTime": t,
        }
        for kind, reason, message in PRESSURE
    ]
    out.append(
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else NETWORK_NOT_READY,
            "lastHeartbeatTime": t,
            "lastTransitionTime": t,
        }
    )
    return out


def set_ready(node: dict, t: str) -> None:
    """The kubelet posts Ready=True (and healthy pressure conditions); the node lifecycle controller removes the
    not-ready and unreachable taints."""
    healthy = {c["type"]: c for c in node_conditions(True, t)}
    conditions = node["status"].setdefault("conditions", [])
    for cond in conditions:
        new = healthy.pop(cond["type"], None)
        if new is None:
            continue
        if cond.get("status") != new["status"]:
            cond.update(new)
        else:
            cond["lastHeartbeatTime"] = t
    conditions.extend(healthy.values())
    _drop_taints(node, (NOT_READY, UNREACHABLE))


def _drop_taints(node: dict, keys: tuple[str, ...]) -> bool:
    taints = node["spec"].get("taints") or []
    kept = [x for x in taints if x["key"] not in keys]
    if len(kept) == len(taints):
        return False
    if kept:
        node["spec"]["taints"] = kept
    else:
        node["spec"].pop("taints", None)
    return True


def drop_taint(node: dict, key: str) -> bool:
    return _drop_taints(node, (key,))


def is_ready(node: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in node["status"].get("conditions") or ()
    )


def node_object(
    inst: Instance,
    group: dict,
    now: float,
    *,
    ready: bool = True,
    uninitialized: bool = False,
    withheld: tuple[str, ...] = (),
) -> dict:
    """The Node an instance of ``group`` (snapshot format) registers as.

    ``ready=False``: NotReady (KubeletNotReady) with the ``not-ready:NoSchedule`` taint that TaintNodesByCondition
    admission adds; ``uninitialized``: also the cloud provider's ``uninitialized=true:NoSchedule`` taint;
    ``withheld``: extended resources not in capacity/allocatable yet (their device plugin has not started)."""
    name = node_name(inst)
    itype = instance_types().get(inst.instance_type)
    allocatable = {r: q for r, q in group["allocatable"].items() if r not in withheld}
    capacity = dict(allocatable)
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
            "allocatable": allocatable,
            "conditions": node_conditions(ready, t),
            "addresses": [
                {"type": "InternalIP", "address": inst.private_ip},
                {"type": "Hostname", "address": name},
                {"type": "InternalDNS", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "containerRuntimeVersion": "containerd://1.7.24",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "Ubuntu 24.04.3 LTS",
                "kernelVersion": "6.8.0-1019-aws",
                "machineID": inst.id,
                "systemUUID": inst.id,
                "bootID": inst.id,
            },
        },
    }
    taints = copy.deepcopy(group.get("taints") or [])
    if uninitialized:
        taints.append({"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"})
    if not ready:
        taints.append({"key": NOT_READY, "effect": "NoSchedule"})
    if taints:
        node["spec"]["taints"] = taints
    return node


NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_LEASE_DURATION_S = 40  # kubelet nodeLeaseDurationSeconds default; renewed every 10 s (a quarter of it)


def micro(t: float) -> str:
    """metav1.MicroTime as the API serves it (RFC 3339 with microseconds)."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_lease(node: dict, now: float) -> dict:
    """The kubelet's heartbeat Lease in kube-node-lease, owned by its Node."""
    name = node["metadata"]["name"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"].get("uid", "")}
            ],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": NODE_LEASE_DURATION_S,
            "renewTime": micro(now),
        },
    }


def advertise(node: dict, group: dict, resources: tuple[str, ...]) -> bool:
    """The kubelet reports a device plugin's resources in capacity and allocatable; False if nothing changed."""
    status = node["status"]
    changed = False
    for r in resources:
        q = group["allocatable"].get(r)
        if q is not None and status["allocatable"].get(r) != q:
            status["allocatable"][r] = q
            status["capacity"][r] = q
            changed = True
    return changed


def daemon_pod(ds: dict, node: dict) -> dict:
    """The DaemonSet's pod for ``node`` (bound to it, with the controller's default tolerations); the caller
    has checked that the DaemonSet admits the node (``daemons.admits``)."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    spec = template.get("spec") or {}
    spec["tolerations"] = pod_tolerations(spec)
    meta = template.get("metadata") or {}
    ds_meta = ds["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{ds_meta['name']}-",
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


def creating_status(pod: dict, node: dict | None, t: str) -> dict:
    """A pod bound to a node whose network is not ready: Pending, its containers ContainerCreating."""
    addresses = (node or {}).get("status", {}).get("addresses", [])
    host_ip = next((a["address"] for a in addresses if a["type"] == "InternalIP"), "")
    return {
        "phase": "Pending",
        "hostIP": host_ip,
        "qosClass": pod["status"].get("qosClass", "Burstable"),
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": t}
        ],
        "containerStatuses": [
            {
                "name": c.get("name", "main"),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
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


def finish_status(
    status: dict, phase: str, reason: str, message: str, t: str, exit_code: int | None = None
) -> None:
    """Turn a pod's status into Succeeded or Failed (containers terminated at ``t``), in place; ``exit_code``: the
    containers exited by themselves with it (no DisruptionTarget condition), else a Failed pod was killed (137)."""
    started = status.get("startTime") or t
    status["phase"] = phase
    if phase == "Failed" and exit_code is None:
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
    if exit_code is None:
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
