"""What `invoke up` deploys, applied to the demos' cluster with kubectl as on a real one (docs/demo.md, "Day one").

In `invoke up`'s order, each rendered by the same ``provision`` code and applied by ``provision.kubectl.apply``
(kubectl on the PATH, the admin's kubeconfig):

1. the GPU add-ons (``provision.addons``: NVIDIA device plugin, DCGM exporter, EFA device plugin), server-side;
2. the gang scheduler (``provision.scheduler``): its PodGroup CRD (``invoke deploy-scheduler`` applies the
   release's from its URL; with no network here the emulator's equivalent definition,
   autoscaler/emulator/crds/podgroups.yaml), then its namespace, RBAC, configuration and Deployment;
3. the autoscaler (``provision.deploy``): namespace (Pod Security ``restricted``), ServiceAccount, ClusterRole and
   Role with their bindings, the AWS config, the Deployment, its PodDisruptionBudget and metrics Service.

Then the autoscaler's Deployment must come up: when the API server refuses its pods (its ReplicaSet's
``ReplicaFailure``, e.g. ``pods "research-autoscaler-…" is forbidden: violates PodSecurity "restricted:latest":
host namespaces (hostNetwork=true), ...``) the demo fails with that message, as the first day on a real cluster
would. Storage (``invoke render-storage``) needs the EFS file system Terraform creates and is not applied.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import yaml

from autoscaler.demo.run import DemoFailed
from autoscaler.sim.workload import NAMESPACE as WORKLOAD_NAMESPACE
from clusterspec.names import AUTOSCALER_NAMESPACE
from clusterspec.spec import Cluster
from provision import addons, deploy, images, kubectl, lab_images, scheduler, tenancy

DEMO_ROLE_ARN = (
    "arn:aws:iam::123456789012:role/dlr-autoscaler"  # moto's account; Terraform's output in a real one
)
CRD = Path(__file__).resolve().parent.parent / "autoscaler" / "emulator" / "crds" / "podgroups.yaml"


def _exe(admin_kubeconfig: Path) -> str:
    """kubectl, once it reaches the cluster with the admin's kubeconfig (the current context of what it runs)."""
    os.environ["KUBECONFIG"] = str(admin_kubeconfig)
    return kubectl.ready(admin_kubeconfig.parent)


def _kubectl(exe: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *args], capture_output=True, text=True, input=input, timeout=60, check=False)


def apply_all(cluster: Cluster, admin_kubeconfig: Path, out: Path, say=print) -> list[str]:
    """Apply the day-one manifests; the lines kubectl printed (with the API server's warnings)."""
    out.mkdir(parents=True, exist_ok=True)
    exe = _exe(admin_kubeconfig)
    said: list[str] = []
    os.environ.setdefault(
        images.BY_TAG_ENV, "1"
    )  # the local stack pulls from no registry (provision/images.py)
    lab_images.use_local_registry(cluster)  # the embedded account's ECR names the lab's own images
    path = tenancy.deploy(cluster, out=out / "tenancy.yaml", kubectl=exe)
    say(
        f"$ kubectl apply --server-side -f {path}  (tenancy: the admission policy, kube-router, the gateways' identity)"
    )
    path = addons.deploy_addons(cluster, out=out / "addons.yaml", kubectl=exe)
    say(f"$ kubectl apply --server-side -f {path}  (the GPU add-ons)")
    files = scheduler.write(cluster, out / "scheduler")
    done = _kubectl(
        exe, "apply", "--server-side", "--field-manager=research-cluster-scheduler", "-f", str(CRD)
    )
    said += _check(done, CRD)
    kubectl.apply(exe, files["gang-scheduler.yaml"], field_manager="research-cluster-scheduler")
    say(
        f"$ kubectl apply --server-side -f {files['gang-scheduler.yaml']}  (the gang scheduler, after its PodGroup CRD)"
    )
    manifests = deploy.write(cluster, DEMO_ROLE_ARN, out / "autoscaler.yaml")
    done = _kubectl(exe, "apply", "-f", str(manifests))
    said += _check(done, manifests)
    say(
        f"$ kubectl apply -f {manifests}  (the autoscaler: namespace, RBAC, AWS config, Deployment, budget, Service)"
    )
    for line in said:
        say(f"  {line}")
    return said


def _check(done: subprocess.CompletedProcess, path: Path) -> list[str]:
    if done.returncode:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise DemoFailed(f"kubectl apply -f {path} failed: {lines[-1] if lines else done.returncode}")
    return [ln for ln in done.stderr.splitlines() if ln.startswith("Warning:")]


def wait_for_autoscaler(admin_kubeconfig: Path, timeout_s: float = 30.0) -> dict:
    """The autoscaler's Deployment once a replica is available; DemoFailed with the API server's message when its
    pods are refused (the ReplicaSet's ReplicaFailure), or when none is available in time."""
    exe = _exe(admin_kubeconfig)
    deadline = time.monotonic() + timeout_s
    while True:
        done = _kubectl(exe, "--kubeconfig", str(admin_kubeconfig), "get", "deployment", deploy.NAME, "-n",
                        AUTOSCALER_NAMESPACE, "-o", "json")  # fmt: skip
        if done.returncode == 0:
            d = json.loads(done.stdout)
            status = d.get("status") or {}
            for c in status.get("conditions") or ():
                if c.get("type") == "ReplicaFailure" and c.get("status") == "True":
                    raise DemoFailed(f"the cluster refused the autoscaler's Deployment: {c.get('message')}")
            if int(status.get("availableReplicas") or 0) >= 1:
                return d
        if time.monotonic() > deadline:
            raise DemoFailed(f"the autoscaler's Deployment had no available replica after {timeout_s:.0f} s: "
                             f"kubectl -n {AUTOSCALER_NAMESPACE} describe deployment {deploy.NAME}")  # fmt: skip
        time.sleep(0.5)


def service_account_kubeconfig(admin_kubeconfig: Path, path: Path) -> Path:
    """A kubeconfig that authenticates as the autoscaler's ServiceAccount (a TokenRequest, as the kubelet makes for
    its pods' projected token): the autoscaler's API calls are then authorized by the RBAC `invoke up` applied."""
    exe = _exe(admin_kubeconfig)
    done = _kubectl(exe, "--kubeconfig", str(admin_kubeconfig), "create", "token", deploy.NAME, "-n",
                    AUTOSCALER_NAMESPACE, "--duration=24h")  # fmt: skip
    if done.returncode:
        raise DemoFailed(f"could not get a token for the autoscaler's ServiceAccount: {done.stderr.strip()}")
    doc = yaml.safe_load(admin_kubeconfig.read_text())
    user = doc["users"][0]
    user["name"] = f"system:serviceaccount:{AUTOSCALER_NAMESPACE}:{deploy.NAME}"
    user["user"] = {"token": done.stdout.strip()}
    doc["contexts"][0]["context"]["user"] = user["name"]
    doc["contexts"][0]["context"]["namespace"] = AUTOSCALER_NAMESPACE
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


def namespace(admin_kubeconfig: Path, name: str) -> None:
    """A namespace for the demo's own workload (as an operator creates one)."""
    exe = _exe(admin_kubeconfig)
    body = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    done = _kubectl(exe, "--kubeconfig", str(admin_kubeconfig), "apply", "-f", "-", input=body)
    if done.returncode:
        raise DemoFailed(f"creating namespace {name}: {done.stderr.strip()}")


def day_one(cluster: Cluster, admin_kubeconfig: Path, out: Path, say=print) -> Path:
    """Apply everything, wait for the autoscaler; the kubeconfig its process uses (its ServiceAccount's)."""
    apply_all(cluster, admin_kubeconfig, out / "deploy", say)
    namespace(admin_kubeconfig, WORKLOAD_NAMESPACE)
    wait_for_autoscaler(admin_kubeconfig)
    say(f"the autoscaler's Deployment is available in {AUTOSCALER_NAMESPACE}")
    return service_account_kubeconfig(admin_kubeconfig, out / "autoscaler.kubeconfig")
