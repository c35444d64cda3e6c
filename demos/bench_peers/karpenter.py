"""Karpenter v1.15.0 (our main around its kwok provider, localcluster/go/karpenter) on a benchmark stack.

Its CRDs come from the module itself (``pkg/apis/crds``, ``kwok/apis/crds``: the module directory that
``go list -m`` names, the one ``make tools`` built from), applied server-side; then the KWOKNodeClass, the
NodePools for ``regions`` and the instance-types file (``karpenter_config``); then the process, out of cluster:
``KUBECONFIG`` (its own user, counted in the audit log), no leader election, free metrics and health ports,
``CAPACITY_LIMITS`` (our moto server's limits).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml

from clusterspec.spec import Cluster as Spec
from demos.autoscaler_demo.processes import Child, ChildError, Children
from demos.bench_peers import karpenter_config
from demos.bench_peers.stack import Stack, find_binary, free_port

GO_MODULE = Path("localcluster/go/karpenter")


def module_dir() -> Path:
    """The sigs.k8s.io/karpenter module directory in the Go module cache (downloaded by ``make tools``)."""
    env = {**os.environ, "GOTOOLCHAIN": "go1.27.3", "GOFLAGS": "-mod=readonly"}
    done = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter"],
        cwd=GO_MODULE, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        raise ChildError(
            f"{GO_MODULE}: the Karpenter module is not downloaded ({done.stderr.strip()}): run `make tools`"
        )
    return Path(done.stdout.strip())


def crd_files() -> list[Path]:
    root = module_dir()
    files = sorted((root / "pkg/apis/crds").glob("*.yaml")) + sorted((root / "kwok/apis/crds").glob("*.yaml"))
    if not files:
        raise ChildError(f"{root}: no CRDs under pkg/apis/crds and kwok/apis/crds")
    return files


def kubectl(stack: Stack, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(find_binary("kubectl")), "--kubeconfig", str(stack.kubeconfig), *args],
        input=stdin, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise ChildError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def install(stack: Stack, spec: Spec, regions: list[str], consolidate_after_s: int) -> Path:
    """Karpenter's CRDs, node class and NodePools on ``stack``; returns the instance-types file."""
    for f in crd_files():
        kubectl(stack, "apply", "--server-side", "-f", str(f))
    for f in crd_files():
        name = yaml.safe_load(f.read_text())["metadata"]["name"]
        kubectl(stack, "wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")
    objects = [
        karpenter_config.node_class(),
        *karpenter_config.node_pools(spec, regions, consolidate_after_s),
    ]
    kubectl(stack, "apply", "-f", "-", stdin="\n---\n".join(yaml.safe_dump(o) for o in objects))
    path = stack.out / "instance-types.json"
    path.write_text(json.dumps(karpenter_config.instance_types(spec), indent=1))
    return path


def start(
    children: Children, stack: Stack, spec: Spec, regions: list[str], limits: dict[tuple[str, str], int],
    consolidate_after_s: int,
) -> tuple[Child, int]:  # fmt: skip
    """Install and start Karpenter; returns the child and its metrics port once it reports healthy."""
    types = install(stack, spec, regions, consolidate_after_s)
    metrics, health = free_port(), free_port()
    env = {
        "KUBECONFIG": str(stack.kubeconfig_for("karpenter")),
        "DISABLE_LEADER_ELECTION": "true",
        "METRICS_PORT": str(metrics),
        "HEALTH_PROBE_PORT": str(health),
        "INSTANCE_TYPES_FILE_PATH": str(types),
        "CAPACITY_LIMITS": karpenter_config.capacity_limits(limits),
        "SYSTEM_NAMESPACE": "kube-system",
        "LOG_LEVEL": "info",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    child = children.start(Child("karpenter", [str(find_binary("karpenter"))], stack.out, env))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if not child.running():
            raise ChildError(f"karpenter exited with status {child.proc.returncode}; see {child.log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as r:
                if r.status == 200:
                    return child, metrics
        except OSError:
            pass
        time.sleep(0.5)
    raise ChildError(f"karpenter was not ready after 90 s; see {child.log_path}")


EC2_METHODS = ("Create", "Delete", "Get", "List")
_SAMPLE = re.compile(r"^karpenter_cloudprovider_duration_seconds_count\{([^}]*)\} (\S+)$", re.M)


def cloud_calls(metrics_port: int) -> dict[str, int]:
    """Calls to the cloud provider that reach EC2 in Karpenter's AWS provider, by method: Create (CreateFleet),
    Delete (TerminateInstances), Get and List (DescribeInstances). GetInstanceTypes and IsDrifted are answered
    from its caches and left out."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: dict[str, int] = {}
    for labels, value in _SAMPLE.findall(text):
        method = re.search(r'method="([^"]*)"', labels)
        if method and method.group(1) in EC2_METHODS:
            out[method.group(1)] = out.get(method.group(1), 0) + int(float(value))
    return out
