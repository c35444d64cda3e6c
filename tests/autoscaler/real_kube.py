"""The autoscaler's Kubernetes side on the run's shared real control plane (the ``kube`` fixture of
tests/conftest.py): its caches pointed at a test's own namespace and nodes, pods and nodes made the way the real
API takes them, and a fault-injecting TLS proxy (tests/faults/kube_proxy.py) in front of kube-apiserver."""

from __future__ import annotations

import functools
import json
from contextlib import contextmanager
from pathlib import Path

import yaml

from autoscaler.adapters.kubernetes import KubeCluster
from localcluster.stack import KWOK_LABEL
from tests.support import wait_until  # noqa: F401 - the adapter tests import it from here

OWNER = "test.research.cluster/owner"  # the label that marks a test's own nodes (its namespace's name)
V100 = {"research.cluster/gpu-model": "v100"}


def scope(cluster: KubeCluster, namespace: str) -> KubeCluster:
    """``cluster``'s caches see the pods, disruption budgets and claims of ``namespace`` and the nodes labelled
    ``OWNER=namespace`` only, as the autoscaler would on a cluster of the test's own (the shared control plane holds
    every test's objects). Its direct reads (``read_pending_pods``, ``read_pods_on_node``) still see all."""
    core, policy = cluster.core, cluster.policy
    cluster.informers["pods"]._list = functools.partial(core.list_namespaced_pod, namespace)
    cluster.informers["pdbs"]._list = functools.partial(
        policy.list_namespaced_pod_disruption_budget, namespace
    )
    cluster.informers["pvcs"]._list = functools.partial(
        core.list_namespaced_persistent_volume_claim, namespace
    )
    cluster.informers["nodes"]._list = functools.partial(
        core.list_node, label_selector=f"{OWNER}={namespace}"
    )
    return cluster


def scoped_class(namespace: str) -> type:
    """A KubeCluster class whose instances are scoped to ``namespace`` (for the command line, which makes its own)."""

    class Scoped(KubeCluster):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            scope(self, namespace)

    return Scoped


# pods that must stay pending whatever nodes other tests add (a Ready V100 kwok node of tests/localcluster would
# take a V100 pod) name a scheduler nobody runs: the autoscaler reads pending as "no node, phase Pending" and
# plans them as any other
NO_SCHEDULER = "nobody-schedules-test-pods"


def pod(name: str, namespace: str, *, gpus: int = 0, selector: dict | None = None, node: str | None = None,
        labels: dict | None = None, scheduled: bool = False) -> dict:  # fmt: skip
    """A pod as a Job's would be (tolerating the GPU taint): bound to ``node``, left to kube-scheduler
    (``scheduled``), else pending for good."""
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus:
        resources = {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)},
                     "limits": {"nvidia.com/gpu": str(gpus)}}  # fmt: skip
    spec: dict = {
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 0,
    }
    if selector:
        spec["nodeSelector"] = dict(selector)
    if node:
        spec["nodeName"] = node
    elif not scheduled:
        spec["schedulerName"] = NO_SCHEDULER
    meta = {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def create(kube, *objects: dict) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)


def node(kube, namespace: str, *, labels: dict | None = None, taints: list | None = None,
         gpus: int = 8) -> str:  # fmt: skip
    """A kwok node of the test's own (labelled ``OWNER=namespace``): kwok keeps it Ready and runs its pods."""
    name = kube.unique("node")
    body = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {KWOK_LABEL: "fake", OWNER: namespace, "kubernetes.io/hostname": name,
                                              **(labels or {})},
                     "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"taints": taints or []},
        "status": {"capacity": {"cpu": "64", "memory": "488Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
                   "allocatable": {"cpu": "63", "memory": "480Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}},
    }  # fmt: skip
    create(kube, body)
    return name


def delete_nodes(kube, namespace: str) -> None:
    kube.kubectl("delete", "nodes", "-l", f"{OWNER}={namespace}", "--wait=false")


def events_for(kube, namespace: str, name: str) -> list[dict]:
    done = kube.kubectl("-n", namespace, "get", "events", "--field-selector", f"involvedObject.name={name}",
                        "-o", "json", check=True)  # fmt: skip
    return json.loads(done.stdout)["items"]


@contextmanager
def proxied(kube, folder: Path, namespace: str):
    """A kubeconfig (path) whose server is a TLS proxy in front of kube-apiserver, and the proxy's faults
    (tests/faults/kube_proxy.py: every request recorded, hooks, ``intercept``). The client is a ServiceAccount of
    ``namespace`` bound to cluster-admin (the proxy forwards its bearer token; a client certificate would end at
    the proxy)."""
    from tests.faults.kube_proxy import ApiProxy, KubeFaults, write_pki

    account, binding = "autoscaler", kube.unique("test-autoscaler-admin")
    kube.kubectl("-n", namespace, "create", "serviceaccount", account, check=True)
    kube.kubectl("create", "clusterrolebinding", binding, "--clusterrole=cluster-admin",
                 f"--serviceaccount={namespace}:{account}", check=True)  # fmt: skip
    token = kube.kubectl(
        "-n", namespace, "create", "token", account, "--duration=1h", check=True
    ).stdout.strip()
    ca, cert, key = write_pki(folder / "proxy-pki")
    faults = KubeFaults()
    proxy = ApiProxy("test", faults, kube.server, kube.workdir / "pki" / "ca.crt", cert, key)
    path = folder / "proxied.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "proxied",
        "clusters": [{"name": "proxied", "cluster": {"server": proxy.url, "certificate-authority": str(ca)}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "proxied", "context": {"cluster": "proxied", "user": account}}],
    }))  # fmt: skip
    path.chmod(0o600)
    try:
        yield path, faults
    finally:
        faults.stopping.set()
        proxy.stop()
        kube.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found")


def own_namespace(kube, prefix: str):
    """A namespace of the test's own on the run's shared control plane, deleted after (for a fixture:
    ``yield from real_kube.own_namespace(kube, "events")``)."""
    name = kube.namespace(prefix)
    yield name
    kube.kubectl("delete", "namespace", name, "--wait=false")
