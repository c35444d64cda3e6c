"""A fresh local Kubernetes control plane for one benchmark run: etcd, kube-apiserver, kube-scheduler,
kube-controller-manager and kwok, the real binaries built by ``make tools`` (``.cache/localcluster/bin``), on
loopback ports picked free, in a folder of their own; every process stopped at the end.

kwok manages the Nodes labelled ``kwok.x-k8s.io/node=fake`` (Karpenter's kwok provider labels its Nodes so; for
ours, localcluster's node agent, ``localcluster/nodes.py``, labels those of moto's instances): it makes them Ready
and runs the pods bound to them. No kubelets, no container runtime, no traffic beyond 127.0.0.1.

Why not ``localcluster.stack.Stack`` (kubeadm's production configuration), as the node agent is localcluster's:
the benchmark counts each autoscaler's Kubernetes API calls, so the API server here authenticates two token
users, ``autoscaler`` and ``karpenter``, and audits one event per request of theirs (watches included);
production's audit policy omits that stage and drops lease calls. That stack also runs the lab's packing
scheduler profile, which would change what both autoscalers are measured on. The binaries and kwok's stages
are the same (``localcluster.binaries``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from demos.autoscaler_demo.processes import Child, ChildError, Children
from localcluster import binaries
from localcluster.processes import free_port
from localcluster.stack import KWOK_LABEL


def find_binary(name: str) -> Path:
    """``name`` as ``make tools`` built it (``localcluster.binaries``: .cache/localcluster/bin or
    $LOCALCLUSTER_BIN)."""
    try:
        return binaries.path(name)
    except binaries.Missing as e:
        raise ChildError(str(e)) from None


AUDITED = ("autoscaler", "karpenter")  # the users whose Kubernetes API calls the audit log counts
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["ResponseStarted", "ResponseComplete"],  # one event per request, watches included
    "rules": [{"level": "Metadata", "users": list(AUDITED)}, {"level": "None"}],
}


@dataclass
class Stack:
    kubeconfig: Path  # the benchmark's own (admin); not audited
    server: str
    out: Path
    tokens: dict[str, str]

    def kubeconfig_for(self, user: str) -> Path:
        """A kubeconfig for ``user`` (one of AUDITED: its calls are counted in the audit log)."""
        path = self.out / f"kubeconfig-{user}"
        _kubeconfig(path, self.server, self.tokens[user])
        return path

    def api_calls(self, user: str) -> int:
        """The Kubernetes API requests ``user`` made (each watch counted once), from the audit log."""
        import json

        log = self.out / "audit.log"
        if not log.exists():
            return 0
        n = 0
        with log.open() as f:
            for line in f:
                if '"stage":"RequestReceived"' in line and json.loads(line)["user"]["username"] == user:
                    n += 1
        return n


def _kubeconfig(path: Path, server: str, token: str) -> None:
    ca = path.parent / "certs" / "apiserver.crt"  # the API server's self-signed serving certificate
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)


def _service_account_key(out: Path) -> tuple[Path, Path]:
    key, pub = out / "sa.key", out / "sa.pub"
    subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
    subprocess.run(
        ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(pub)], check=True, capture_output=True
    )
    return key, pub


def _wait_ready(server: str, token: str, child: Child, ca: Path, timeout_s: float = 60.0) -> None:
    import ssl
    import urllib.request

    req = urllib.request.Request(f"{server}/readyz", headers={"Authorization": f"Bearer {token}"})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.running():
            raise ChildError(f"{child.name} exited; see {child.log_path}")
        try:
            if not ca.exists():
                raise OSError("no serving certificate yet")
            ctx = ssl.create_default_context(cafile=str(ca))
            with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise ChildError(f"{child.name} was not ready after {timeout_s:.0f} s; see {child.log_path}")


def start(children: Children, out: Path) -> Stack:
    """Start a fresh control plane under ``out`` (emptied first); returns its admin kubeconfig."""
    out = out.resolve()  # the kubeconfigs name files by absolute path
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    children.start(
        Child("etcd", [str(find_binary("etcd")), "--data-dir", str(out / "etcd"),
                       "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                       "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                       "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                       "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
                       "--unsafe-no-fsync", "--quota-backend-bytes", str(4 << 30),
                       # progress notifications, which the API server's streaming lists (client-go's WatchList,
                       # used by kwok and Karpenter) need, as kubeadm's etcd sets them
                       "--watch-progress-notify-interval", "5s"], out, env)
    )  # fmt: skip
    tokens = {user: secrets.token_hex(16) for user in ("admin", *AUDITED)}
    (out / "tokens.csv").write_text("".join(f"{t},{u},{u},system:masters\n" for u, t in tokens.items()))
    (out / "tokens.csv").chmod(0o600)
    (out / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
    token = tokens["admin"]
    key, pub = _service_account_key(out)
    server = f"https://127.0.0.1:{api_port}"
    api = children.start(
        Child("kube-apiserver", [str(find_binary("kube-apiserver")), "--etcd-servers", etcd_url,
              "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(api_port),
              "--cert-dir", str(out / "certs"), "--token-auth-file", str(out / "tokens.csv"),
              "--authorization-mode", "RBAC", "--service-cluster-ip-range", "10.96.0.0/16",
              "--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", str(pub),
              "--service-account-signing-key-file", str(key), "--disable-admission-plugins", "ServiceAccount",
              "--max-requests-inflight", "2000", "--max-mutating-requests-inflight", "1000",
              "--audit-policy-file", str(out / "audit-policy.yaml"), "--audit-log-path", str(out / "audit.log"),
              "--audit-log-format", "json"], out, env)
    )  # fmt: skip
    _wait_ready(server, token, api, out / "certs" / "apiserver.crt")
    kubeconfig = out / "kubeconfig"
    _kubeconfig(kubeconfig, server, token)
    kc = str(kubeconfig)
    children.start(
        Child("kube-scheduler", [str(find_binary("kube-scheduler")), "--kubeconfig", kc,
              "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc, "--leader-elect=false",
              "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
              "--kube-api-qps", "500", "--kube-api-burst", "1000"], out, env)
    )  # fmt: skip
    # pod GC (pods of deleted Nodes), namespaces, the garbage collector and the node lifecycle (it lifts the
    # not-ready taint admission puts on every new Node once kwok reports it Ready); nothing that needs a cloud
    children.start(
        Child("kube-controller-manager", [str(find_binary("kube-controller-manager")), "--kubeconfig", kc,
              "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc, "--leader-elect=false",
              "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
              "--controllers", "namespace,garbagecollector,podgc,serviceaccount,nodelifecycle",
              "--kube-api-qps", "500", "--kube-api-burst", "1000"], out, env)
    )  # fmt: skip
    children.start(
        Child("kwok", [str(find_binary("kwok")), "--kubeconfig", kc, "--manage-all-nodes=false",
              "--manage-nodes-with-label-selector", f"{KWOK_LABEL}=fake",
              "--node-ip", "127.0.0.1", "--server-address", f"127.0.0.1:{free_port()}",
              "--node-lease-duration-seconds", "40",
              *(f"--config={f}" for f in sorted(binaries.KWOK_STAGES.glob("*.yaml")))], out, env)
    )  # fmt: skip
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    return Stack(kubeconfig, server, out, tokens)
