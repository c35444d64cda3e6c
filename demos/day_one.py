"""The autoscaler's Deployment, as the first day on a cluster checks it after `invoke up` (docs/demo.md, "Day one";
what `invoke up` deploys is applied to the local control plane by localcluster/day_one.py): available, or refused
with the API server's own message (the ReplicaSet's ``ReplicaFailure``, e.g. ``pods "research-autoscaler-…" is
forbidden: violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), ...``)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from clusterspec.names import AUTOSCALER_NAMESPACE
from demos.autoscaler_demo.run import DemoFailed
from provision import deploy, kubectl


def _exe(admin_kubeconfig: Path) -> str:
    """kubectl, once it reaches the cluster with the admin's kubeconfig (the current context of what it runs)."""
    os.environ["KUBECONFIG"] = str(admin_kubeconfig)
    return kubectl.ready(admin_kubeconfig.parent)


def _kubectl(exe: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *args], capture_output=True, text=True, input=input, timeout=60, check=False)


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
