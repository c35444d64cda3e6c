"""Issue 36, node identity: the autoscaler (and with it its AWS role, through its projected token) is kept off every
node whose identity a join token can claim. The Deployment `invoke deploy` renders, applied to the local stack's
real API server, is placed by the real kube-scheduler: with a cloud worker and a lab server (kwok nodes as those
kubelets register them) its pods stay Pending; once a control-plane member is there (kubeadm's label and NoSchedule
taint, which no kubelet may give itself: tests/provision/terraform/test_csr_approver_api.py) they run on it."""

from __future__ import annotations

import json
import time

from clusterspec.loader import load_spec
from localcluster.aws_cluster import control_plane_node
from localcluster.nodes import node_body
from localcluster.stack import KWOK_LABEL
from provision import deploy
from tests.support import wait_until

SCOPE = "research.cluster/test-placement"


def _pods(kube, ns: str) -> list[dict]:
    return json.loads(kube.kubectl("-n", ns, "get", "pods", "-o", "json", check=True).stdout)["items"]


def _unschedulable(pod: dict) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c.get("message", "")
    return ""


def test_the_autoscaler_runs_on_control_plane_members_only(kube):
    spec = load_spec()
    scope = kube.unique("p")
    ns = kube.namespace("placement")
    worker_group = {"name": "gpu-workers", "instance_type": "g5.xlarge", "region": spec.primary_region,
                    "labels": {"research.cluster/pool": "gpu"}}  # fmt: skip
    worker = node_body(worker_group, kube.unique("i"), f"{spec.primary_region}a", uninitialized=False)
    server = next(s for site in spec.sites for s in site.servers if "worker" in s.roles)
    lab = control_plane_node(spec)  # a kubelet's Node shape, made a lab server's: its labels and taints
    lab["metadata"]["labels"] = {
        k: v for k, v in lab["metadata"]["labels"].items() if "control-plane" not in k
    }
    lab["metadata"]["labels"].update(server.labels)
    lab["spec"]["taints"] = [t.model_dump(exclude_none=True) for t in server.taints]
    cp = control_plane_node(spec)
    nodes = []
    for node, name in ((worker, kube.unique("worker")), (lab, kube.unique("lab")), (cp, kube.unique("cp"))):
        node["metadata"]["name"] = name
        node["metadata"]["labels"].update({KWOK_LABEL: "fake", SCOPE: scope, "kubernetes.io/hostname": name})
        nodes.append(node)
    docs = [d for d in deploy.render(spec, None) if d["kind"] in ("ServiceAccount", "Deployment")]
    try:
        for node in nodes[:2]:
            kube.kubectl("create", "-f", "-", input=json.dumps(node), check=True)
        for doc in docs:
            doc["metadata"]["namespace"] = ns
            if doc["kind"] == "Deployment":
                pod = doc["spec"]["template"]["spec"]
                assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
                # only this test's nodes are candidates (the run's other tests have nodes of their own)
                pod.setdefault("affinity", {})["nodeAffinity"] = {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": SCOPE, "operator": "In", "values": [scope]}]}]}}  # fmt: skip
            kube.kubectl("create", "-f", "-", input=json.dumps(doc), check=True)

        def refused() -> list[str]:
            pods = _pods(kube, ns)
            messages = [_unschedulable(p) for p in pods]
            return messages if len(pods) == 2 and all(messages) else []

        messages = wait_until(refused, timeout_s=60, what="the autoscaler's pods refused by kube-scheduler")
        assert all("didn't match Pod's node affinity/selector" in m for m in messages), messages
        time.sleep(2)  # and they stay so: no node of ours took them
        assert all(not p["spec"].get("nodeName") for p in _pods(kube, ns))

        kube.kubectl("create", "-f", "-", input=json.dumps(nodes[2]), check=True)
        cp_name = nodes[2]["metadata"]["name"]

        def placed() -> list[str]:
            pods = _pods(kube, ns)
            names = [p["spec"].get("nodeName") for p in pods]
            return names if len(pods) == 2 and all(names) else []

        assert wait_until(placed, timeout_s=60, what="the autoscaler's pods placed") == [cp_name, cp_name]
    finally:
        kube.kubectl("delete", "namespace", ns, "--wait=false")
        for node in nodes:
            kube.kubectl("delete", "node", node["metadata"]["name"], "--ignore-not-found")
