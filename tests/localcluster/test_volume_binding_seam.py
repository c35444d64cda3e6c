"""The seam between the planner and kube-scheduler's VolumeBinding, on the real local control plane (the ``kube``
fixture: kube-apiserver, kube-controller-manager's PV controller, kube-scheduler, kwok).

A pod whose claim is not bound yet (an Immediate class, no volume: storage not applied, issue 33) stays Pending
with kube-scheduler's own reason, and the planner, given the snapshot the Kubernetes adapter builds from the same
API server, refuses it with the same words and buys nothing. Once a volume pre-bound to the claim (``claimRef``)
exists, the PV controller binds it, kube-scheduler's reason moves on to the node selector, the planner buys a node
of the one group whose template matches, and kube-scheduler binds the pod to such a node once it registers.
"""

from __future__ import annotations

import json
import time

from autoscaler.adapters.kubernetes import KubeCluster, api_client
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from autoscaler.core.volumes import IMMEDIATE_UNBOUND

SEAM_LABEL = "research.cluster/seam"  # only the test's group template and node carry it
BYSTANDER_LABEL = "research.cluster/seam-bystander"  # the test's node that its pods do not fit


def _apply(kube, obj: dict) -> None:
    kube.kubectl("apply", "-f", "-", input=json.dumps(obj), check=True)


def _get(kube, *args: str) -> dict:
    return json.loads(kube.kubectl("get", *args, "-o", "json", check=True).stdout)


def _wait(what: str, check, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def _unschedulable_message(kube, ns: str, pod: str) -> str | None:
    """kube-scheduler's message on the pod's PodScheduled=False condition, else on its FailedScheduling Event."""
    obj = _get(kube, "-n", ns, "pod", pod)
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("message"):
            return c["message"]
    events = _get(
        kube, "-n", ns, "events", "--field-selector", f"involvedObject.name={pod},reason=FailedScheduling"
    )
    messages = [e.get("message") for e in events.get("items") or () if e.get("message")]
    return messages[-1] if messages else None


def _plan(kube, ns: str, group: dict):
    """The plan for the test's pods, from the snapshot the adapter builds (lean caches, listed once) of this API
    server: its claims, volumes and classes, and the test's own pods and nodes (other tests share the cluster)."""
    cluster = KubeCluster(api_client(str(kube.admin_kubeconfig)))
    cluster.sync()
    pods = [p for p in cluster.list_pods() if p["metadata"].get("namespace") == ns]
    nodes = [n for n in cluster.list_nodes()
             if ns in ((n["metadata"].get("labels") or {}).get(k) for k in (SEAM_LABEL, BYSTANDER_LABEL))]  # fmt: skip
    snapshot = {"pods": pods, "nodes": nodes, "groups": [group], **cluster.list_storage()}
    return plan(parse_snapshot(snapshot)).to_dict(placements=True)


def _node(name: str, labels: dict) -> dict:
    """A node kwok drives (Ready, heartbeats), shaped as an m6i.2xlarge of the test's group."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {**labels, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "node.kubernetes.io/instance-type": "m6i.2xlarge"}},
        "status": {"allocatable": {"cpu": "7910m", "memory": "30Gi", "pods": "58"},
                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"}},
    }  # fmt: skip


def _pod(ns: str, name: str, claim: str) -> dict:
    """A pod (Pod Security restricted) that only nodes of the test's group take, with one claim mounted."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeSelector": {SEAM_LABEL: ns},
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                            "volumeMounts": [{"name": "home", "mountPath": "/home/alice"}]}],
            "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }  # fmt: skip


def test_a_pod_with_an_unbound_immediate_claim_is_refused_by_both_and_placed_by_both_once_bound(kube) -> None:
    ns = kube.namespace("pvc")
    storage_class, volume, node, other = (kube.unique(p) for p in ("efs", "pv", "seam", "bystander"))
    group = {"name": "seam", "region": "us-west-2", "zones": ["us-west-2a"], "instance_type": "m6i.2xlarge",
             "min": 0, "max": 3, "desired": 0, "labels": {SEAM_LABEL: ns}}  # fmt: skip
    try:
        # kube-controller-manager's service account controller makes the namespace's default account; until then
        # the ServiceAccount admission plugin refuses pods
        _wait(
            "the default service account",
            lambda: kube.kubectl("-n", ns, "get", "serviceaccount", "default").returncode == 0,
        )
        # a node the pods do not fit (without any node kube-scheduler says only "no nodes available")
        _apply(kube, _node(other, {BYSTANDER_LABEL: ns}))
        # an Immediate class whose provisioner does not run here: the claim stays Pending, as before `invoke
        # storage` on a fresh cluster
        _apply(kube, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": storage_class},
                      "provisioner": "efs.csi.aws.com", "volumeBindingMode": "Immediate"})  # fmt: skip
        _apply(kube, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "home", "namespace": ns},
                      "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
                               "resources": {"requests": {"storage": "1Gi"}}}})  # fmt: skip
        _apply(kube, _pod(ns, "train", "home"))
        _apply(kube, _pod(ns, "orphan", "nope"))  # its claim does not exist

        # kube-scheduler leaves both Pending on their claims; the planner says the same and buys nothing
        said = {pod: _wait(f"kube-scheduler's verdict on {pod}", lambda pod=pod: _unschedulable_message(kube, ns, pod))
                for pod in ("train", "orphan")}  # fmt: skip
        refused = _plan(kube, ns, group)
        assert refused["scale_up"] == {}
        reasons = {u["pod"].split("/")[1]: u["reason"] for u in refused["unschedulable"]}
        assert reasons == {"train": "pod has unbound immediate PersistentVolumeClaims",
                           "orphan": 'persistentvolumeclaim "nope" not found'}  # fmt: skip
        assert reasons["train"] == IMMEDIATE_UNBOUND
        for pod, reason in reasons.items():
            assert reason in said[pod], (pod, said[pod])  # kube-scheduler's own words

        # storage applied: a volume pre-bound to the claim; the PV controller binds them
        _apply(kube, {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
                     "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": ns, "name": "home"},
                     "csi": {"driver": "efs.csi.aws.com", "volumeHandle": f"fs-0123456789abcdef0::{volume}"}},
        })  # fmt: skip
        _wait(
            "the claim bound", lambda: _get(kube, "-n", ns, "pvc", "home")["status"].get("phase") == "Bound"
        )

        # kube-scheduler now looks past the claim (no node matches the selector); the planner buys one node
        _wait("kube-scheduler past the claim",
              lambda: (m := _unschedulable_message(kube, ns, "train")) and IMMEDIATE_UNBOUND not in m)  # fmt: skip
        planned = _plan(kube, ns, group)
        assert planned["unschedulable"] == [{"pod": f"{ns}/orphan", "reason": reasons["orphan"]}]
        assert planned["scale_up"] == {"seam": 1}
        assert planned["placements"] == {f"{ns}/train": "new:seam:0"}

        # the node the planner bought registers (kwok drives it Ready): kube-scheduler binds the pod to it
        _apply(kube, _node(node, {SEAM_LABEL: ns}))
        bound = _wait(
            "kube-scheduler's binding", lambda: _get(kube, "-n", ns, "pod", "train")["spec"].get("nodeName")
        )
        assert bound == node
    finally:
        kube.kubectl("delete", "node", node, other, "--ignore-not-found", "--wait=false")
        kube.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
        kube.kubectl("delete", "pv", volume, "--ignore-not-found", "--wait=false")
        kube.kubectl("delete", "storageclass", storage_class, "--ignore-not-found", "--wait=false")
