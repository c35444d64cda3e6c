"""The real local control plane (issue 33): the binaries report their real versions, the stack writes no address
outside 127.0.0.0/8 (kubeconfigs, flags, nodes, pods, services), and it runs the admission the project's control
plane runs (kubeadm's flags: NodeRestriction, Node and RBAC authorization, Pod Security)."""

from __future__ import annotations

import ipaddress
import json
import re
import time
from pathlib import Path

import pytest
import yaml

from localcluster import binaries, stack

pytestmark = pytest.mark.tool
IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?:/\d{1,2})?(?![\d.])")


def _not_loopback(text: str) -> list[str]:
    return [a for a in IPV4.findall(text) if not ipaddress.ip_address(a).is_loopback]


@pytest.mark.parametrize(
    "name, expected",
    [("kube-apiserver", "Kubernetes v1.35.4"), ("kube-controller-manager", "Kubernetes v1.35.4"),
     ("kube-scheduler", "Kubernetes v1.35.4"), ("kubeadm", "v1.35.4"), ("kubectl", "v1.35.4"),
     ("etcd", "etcd Version: 3.6.16"), ("kwok", "v0.8.0")],
)  # fmt: skip
def test_each_binary_reports_its_real_version(kube, name, expected) -> None:
    assert expected in binaries.version(name)


def test_every_address_the_stack_writes_is_loopback(kube) -> None:
    """Kubeconfigs, every process's flags, and the addresses of nodes, pods and services."""
    for conf in sorted((kube.workdir / "etc" / "kubernetes").glob("*.conf")):
        for server in stack.kubeconfig_servers(conf):
            assert _not_loopback(server) == [], f"{conf.name}: {server}"
    state = json.loads((kube.workdir / "stack.json").read_text())
    for name, pid in state["pids"].items():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        assert _not_loopback(" ".join(argv)) == [], f"{name}: {argv}"
    node = kube.unique("addr-node")
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {stack.KWOK_LABEL: "fake"}},
            "spec": {"taints": [{"key": node, "effect": "NoSchedule"}]}}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
    ns = kube.namespace("addr")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(pod), check=True)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": ns},
           "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(svc), check=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = json.loads(kube.kubectl("-n", ns, "get", "pod", "p", "-o", "json", check=True).stdout)
        if got.get("status", {}).get("podIP"):
            break
        time.sleep(0.3)
    nodes = kube.kubectl("get", "node", node, "-o", "json", check=True).stdout
    pods = kube.kubectl("-n", ns, "get", "pod", "p", "-o", "json", check=True).stdout
    services = kube.kubectl("-n", ns, "get", "service", "s", "-o", "json", check=True).stdout
    assert json.loads(pods)["status"]["podIP"], "kwok gave the pod no address"
    for what, text in (("node", nodes), ("pod", pods), ("service", services)):
        assert _not_loopback(text) == [], f"{what}: {_not_loopback(text)}"
    kube.kubectl("delete", "node", node, "--wait=false")


def test_the_api_server_runs_the_control_planes_admission(kube) -> None:
    state = json.loads((kube.workdir / "stack.json").read_text())
    argv = Path(f"/proc/{state['pids']['kube-apiserver']}/cmdline").read_bytes().decode().split("\0")
    flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    assert flags["enable-admission-plugins"] == "NodeRestriction"
    assert flags["authorization-mode"] == "Node,RBAC"
    assert flags["enable-bootstrap-token-auth"] == "true"
    ns = kube.namespace("psa", labels={"pod-security.kubernetes.io/enforce": "restricted"})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": ns},
           "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}  # fmt: skip
    done = kube.kubectl("create", "-f", "-", input=json.dumps(pod))
    assert done.returncode != 0
    assert 'violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true)' in done.stderr


def test_the_admins_kubeconfig_is_kubeadms(kube) -> None:
    """admin.conf's group is kubeadm:cluster-admins, bound as `kubeadm init` binds it; super-admin.conf bypasses
    RBAC (system:masters) and is not what anyone is handed."""
    doc = yaml.safe_load(kube.admin_kubeconfig.read_text())
    assert doc["users"][0]["name"] == "kubernetes-admin"
    done = kube.kubectl("auth", "whoami", "-o", "json", check=True)
    assert "kubeadm:cluster-admins" in json.loads(done.stdout)["status"]["userInfo"]["groups"]
    assert kube.kubectl("auth", "can-i", "*", "*", check=True).stdout.strip() == "yes"


def test_a_compressed_stack_retries_unschedulable_pods_every_second() -> None:
    """kube-scheduler's backoff (1 s doubling to 10 s) is wall-clock: at the demo's 60x each retry of a pod that
    did not fit (a device plugin pod before its node is Ready, a job's pod before the GPUs) would wait up to 10
    model minutes, so a compressed stack retries at the floor, 1 s; the clients' rate limits, wall-clock too, are
    raised by the compression; a stack on the wall clock keeps the defaults."""
    assert stack.compressed_backoff(60.0) == 1
    assert stack.compressed_backoff(1.0) is None
    config = stack.with_backoff(
        {"kind": "KubeSchedulerConfiguration", "clientConnection": {"kubeconfig": "k"}}, 1
    )
    assert config == {"kind": "KubeSchedulerConfiguration", "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1,
                      "clientConnection": {"kubeconfig": "k", "qps": 3000, "burst": 6000}}  # fmt: skip
    assert stack.compressed_overrides(60.0) == {
        "kube-controller-manager": {"kube-api-qps": "1200", "kube-api-burst": "1800"}
    }
    assert stack.compressed_overrides(1.0) == {}


def test_the_single_member_control_plane_elects_no_leader(kube) -> None:
    """One member: the controller manager and the scheduler run without leader election (no Lease renewed every
    2 s, the idle cluster's largest steady load), and still do their work (other tests schedule and run pods)."""
    state = json.loads((kube.workdir / "stack.json").read_text())
    for name in ("kube-controller-manager", "kube-scheduler"):
        argv = Path(f"/proc/{state['pids'][name]}/cmdline").read_bytes().decode().split("\0")
        assert [a for a in argv if a.startswith("--leader-elect=")] == ["--leader-elect=false"], name
    leases = kube.kubectl("-n", "kube-system", "get", "leases", "-o", "name", check=True).stdout.split()
    assert not {"lease.coordination.k8s.io/kube-controller-manager",
                "lease.coordination.k8s.io/kube-scheduler"} & set(leases), leases  # fmt: skip


def test_the_endpoint_controllers_that_only_fail_on_loopback_addresses_are_off(kube) -> None:
    """The API server refuses loopback addresses in Endpoints (the reason the stack leaves those controllers
    out): a Service's Endpoints with a pod address of the stack is refused, and the controller manager runs
    kubeadm's controllers less the three that write them."""
    state = json.loads((kube.workdir / "stack.json").read_text())
    argv = Path(f"/proc/{state['pids']['kube-controller-manager']}/cmdline").read_bytes().decode().split("\0")
    (controllers,) = [a.split("=", 1)[1] for a in argv if a.startswith("--controllers=")]
    assert controllers.split(",") == ["*", "bootstrapsigner", "tokencleaner", *stack.NO_LOOPBACK_ENDPOINTS]
    ns = kube.namespace("endpoints")
    body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "s", "namespace": ns},
            "subsets": [{"addresses": [{"ip": "127.128.0.9"}], "ports": [{"port": 80}]}]}  # fmt: skip
    done = kube.kubectl("create", "-f", "-", input=json.dumps(body))
    assert done.returncode != 0 and "may not be in the loopback range" in done.stderr


def test_etcd_keeps_kubeadms_progress_interval(kube) -> None:
    """etcd runs with kubeadm's own flags (its 5-s progress notifications): the API server's bookmarks to quiet
    watches follow them, and the autoscaler's cache ages (a 10-s bound in the fault scenarios) depend on those.
    At once a minute (tried for the idle CPU) an unreadable pods API was blamed on the quiet caches."""
    state = json.loads((kube.workdir / "stack.json").read_text())
    argv = Path(f"/proc/{state['pids']['etcd']}/cmdline").read_bytes().decode().split("\0")
    assert any(a.startswith("--data-dir") for a in argv), argv
    assert not [
        a
        for a in argv
        if a.startswith("--watch-progress-notify-interval=") and a != "--watch-progress-notify-interval=5s"
    ]
