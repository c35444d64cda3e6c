"""The local control plane's configuration from kubeadm itself.

The kubeadm configuration is the one production renders: ``write_init_config`` of the control plane's bootstrap
(terraform/modules/control_plane/scripts/bootstrap.sh) run by bash with local values (the API on a loopback port,
a loopback pod and service network), then localised (the certificates' folder, an advertise address). kubeadm's
phases then write the certificates and kubeconfigs, and its dry run writes the static pods' manifests, whose
commands are the flags each component runs with (admission plugins, authorization modes, service-account keys,
CSR signing), rewritten only where a process on this machine must differ from a static pod: its files under the
stack's folder, and every address and port on loopback.

kubeadm refuses a loopback advertise address, so the configuration names one of TEST-NET-1 (RFC 5737, never
routed); it appears in the API server's certificate as a SAN and nowhere else: every kubeconfig and flag that
carries it is rewritten to 127.0.0.1 before anything starts.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from localcluster import binaries
from provision import scheduler

ROOT = binaries.ROOT
BOOTSTRAP = ROOT / "terraform" / "modules" / "control_plane" / "scripts" / "bootstrap.sh"
PLACEHOLDER = "192.0.2.1"  # TEST-NET-1: kubeadm needs a non-loopback advertise address; rewritten everywhere
LOCAL_POD_CIDR = "127.128.0.0/14"
LOCAL_SERVICE_CIDR = "127.96.0.0/16"
KUBERNETES_VERSION = "v1.35.4"  # what localcluster/go/kubernetes builds
ETC = "/etc/kubernetes/"


class KubeadmFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Ports:
    api: int
    etcd_client: int
    etcd_peer: int
    etcd_metrics: int
    controller_manager: int
    scheduler: int


def _run(args: list[str], env: dict | None = None, input: str | None = None) -> str:
    done = subprocess.run(args, capture_output=True, text=True, env=env, input=input, timeout=120, check=False)
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise KubeadmFailed(f"{' '.join(args[:4])}: exit {done.returncode}: {' / '.join(tail)}")
    return done.stdout


def render_production(root: Path, values: dict[str, str]) -> list[dict]:
    """The InitConfiguration and ClusterConfiguration that the bootstrap's ``write_init_config`` writes, with
    ``values`` for its variables (ENDPOINT, API_HOST, LB_DNS_NAME, KUBERNETES_VERSION, POD_CIDR, SERVICE_CIDR,
    SA_ISSUER, SCHEDULER_KUBEADM), run by bash under ``root`` (CP_ROOT)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CP_ROOT": str(root), "MEMBER": "0", **values}
    _run(["bash", "-c", f'set -euo pipefail; source "{BOOTSTRAP}"; write_init_config'], env=env)
    text = (root / "etc/kubernetes/bootstrap/init.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d]


def production_values(cluster, endpoint: str, api_host: str, lb_dns_name: str, issuer: str = "") -> dict:
    return {
        "ENDPOINT": endpoint,
        "API_HOST": api_host,
        "LB_DNS_NAME": lb_dns_name,
        "KUBERNETES_VERSION": cluster.kubernetes.version,
        "POD_CIDR": str(cluster.kubernetes.pod_cidr),
        "SERVICE_CIDR": str(cluster.kubernetes.service_cidr),
        "SA_ISSUER": issuer,
        "SCHEDULER_KUBEADM": scheduler.control_plane_files()["kubeadm"],
    }


def local_config(workdir: Path, ports: Ports) -> Path:
    """The kubeadm configuration of the local control plane: production's renderer with local values."""
    values = {
        "ENDPOINT": f"127.0.0.1:{ports.api}",
        "API_HOST": "localhost",
        "LB_DNS_NAME": "127.0.0.1",
        "KUBERNETES_VERSION": KUBERNETES_VERSION,
        "POD_CIDR": LOCAL_POD_CIDR,
        "SERVICE_CIDR": LOCAL_SERVICE_CIDR,
        "SA_ISSUER": "",
        "SCHEDULER_KUBEADM": scheduler.control_plane_files()["kubeadm"],
    }
    docs = render_production(workdir / "render", values)
    for doc in docs:
        if doc["kind"] == "InitConfiguration":
            doc["localAPIEndpoint"] = {"advertiseAddress": PLACEHOLDER, "bindPort": ports.api}
            doc["nodeRegistration"] = {"name": "control-plane-0", "criSocket": "unix:///dev/null"}
        elif doc["kind"] == "ClusterConfiguration":
            doc["certificatesDir"] = str(workdir / "pki")
            doc["etcd"] = {"local": {"dataDir": str(workdir / "etcd")}}
    path = workdir / "kubeadm.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def validate(path: Path) -> None:
    """``kubeadm config validate``: KubeadmFailed with kubeadm's message."""
    _run([str(binaries.path("kubeadm")), "config", "validate", "--config", str(path)])


def phases(workdir: Path, config: Path, ports: Ports) -> dict[str, list[str]]:
    """Certificates and kubeconfigs by kubeadm's phases; each component's command from kubeadm's dry run of its
    static pod, localised. Returns {component: argv}."""
    kubeadm = str(binaries.path("kubeadm"))
    etc = workdir / "etc" / "kubernetes"
    etc.mkdir(parents=True, exist_ok=True)
    _run([kubeadm, "init", "phase", "certs", "all", "--config", str(config)])
    _run([kubeadm, "init", "phase", "kubeconfig", "all", "--config", str(config), "--kubeconfig-dir", str(etc)])
    for conf in etc.glob("*.conf"):
        _loopback_kubeconfig(conf, ports.api)
    dry = workdir / "manifests"
    dry.mkdir(exist_ok=True)
    env = {**os.environ, "KUBEADM_INIT_DRYRUN_DIR": str(dry)}
    _run([kubeadm, "init", "phase", "control-plane", "all", "--dry-run", "--config", str(config)], env=env)
    _run([kubeadm, "init", "phase", "etcd", "local", "--dry-run", "--config", str(config)], env=env)
    commands = {}
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        pod = yaml.safe_load((dry / f"{name}.yaml").read_text())
        commands[name] = localise(name, pod["spec"]["containers"][0]["command"], workdir, ports)
    return commands


def _loopback_kubeconfig(path: Path, api_port: int) -> None:
    doc = yaml.safe_load(path.read_text())
    for c in doc.get("clusters") or ():
        c["cluster"]["server"] = f"https://127.0.0.1:{api_port}"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)


def localise(name: str, command: list[str], workdir: Path, ports: Ports) -> list[str]:
    """A static pod's command as a process of this machine: files under ``workdir``, addresses on loopback."""
    flags = _flags(command)
    etc = str(workdir / "etc" / "kubernetes") + "/"
    flags = {k: v.replace(ETC, etc) for k, v in flags.items()}
    loop = "127.0.0.1"
    if name == "etcd":
        flags |= {
            "listen-client-urls": f"https://{loop}:{ports.etcd_client}",
            "advertise-client-urls": f"https://{loop}:{ports.etcd_client}",
            "listen-peer-urls": f"https://{loop}:{ports.etcd_peer}",
            "initial-advertise-peer-urls": f"https://{loop}:{ports.etcd_peer}",
            "initial-cluster": f"{flags['name']}=https://{loop}:{ports.etcd_peer}",
            "listen-metrics-urls": f"http://{loop}:{ports.etcd_metrics}",
        }
    elif name == "kube-apiserver":
        flags |= {
            "advertise-address": loop,
            "bind-address": loop,
            "etcd-servers": f"https://{loop}:{ports.etcd_client}",
            # The `kubernetes` Service's endpoints would carry the advertise address, and endpoints refuse
            # loopback ones: nothing in this stack reaches the API through the Service.
            "endpoint-reconciler-type": "none",
        }
    elif name == "kube-controller-manager":
        flags |= {"bind-address": loop, "secure-port": str(ports.controller_manager)}
    elif name == "kube-scheduler":
        flags |= {"bind-address": loop, "secure-port": str(ports.scheduler)}
        flags["config"] = _scheduler_config(workdir, flags.get("config"))
    for key, value in flags.items():
        if PLACEHOLDER in value:
            raise KubeadmFailed(f"{name}: --{key}={value} still names {PLACEHOLDER}")
    return [name, *(f"--{k}={v}" for k, v in sorted(flags.items()))]


def _scheduler_config(workdir: Path, path: str | None) -> str:
    """The control plane's KubeSchedulerConfiguration (provision/scheduler.py, as the bootstrap writes it) with its
    kubeconfig under the stack's folder."""
    doc = scheduler.control_plane_config()
    doc["clientConnection"]["kubeconfig"] = str(workdir / "etc/kubernetes/scheduler.conf")
    out = Path(path or workdir / "etc/kubernetes/scheduler/config.yaml")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(out)
