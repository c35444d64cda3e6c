"""The local control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler as processes of this
machine, configured by kubeadm (localcluster/kubeadm.py), and kwok for the nodes' heartbeats and the phases of
pods nobody runs. ``Stack(workdir).start()``; ``stop()``; the admin's kubeconfig at ``admin_kubeconfig``."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml

from localcluster import binaries, kubeadm
from localcluster.processes import Processes, free_ports

# Nodes kwok manages carry this label (value "fake"): a label, not an annotation, because a watch by label
# selector delivers a node that starts to match (the node agent hands a node to kwok once it is Ready).
KWOK_LABEL = "kwok.x-k8s.io/node"
ADMINS_BINDING = "kubeadm:cluster-admins"


# kubeadm's flags changed for a control plane of one member, as one runs a single-member control plane: with no
# other member to hand over to, leader election only renews a Lease every 2 s (a write to etcd and an event to every
# watcher of leases, the idle cluster's largest steady load). A component started twice on one stack is an error of
# ours, not a case to survive. The lab's own control plane (three members) keeps kubeadm's flags.
SINGLE_MEMBER: dict[str, dict[str, str]] = {
    "kube-controller-manager": {"leader-elect": "false"},
    "kube-scheduler": {"leader-elect": "false"},
}


# etcd keeps kubeadm's progress interval (5 s). Once a minute saved about 1% of a core idle, but the API server's
# bookmarks to quiet watches follow etcd's progress: the autoscaler's caches of quiet kinds (PodDisruptionBudgets,
# PersistentVolumes) then looked 10 s old to a 10-s bound, and the fault scenario of an unreadable pods API blamed
# them instead of the pods cache (make faults).
QUIET: dict[str, dict[str, str]] = {}

# Controllers left out here: every pod address of the local stack is a loopback one (127.128.0.0/14), which the API
# server refuses in Endpoints and EndpointSlices, so these only fail their updates and record a Warning Event for
# every Service, again and again. Nothing of the stack reads them (the process kubelet gives pods their Services'
# addresses from the Services themselves).
NO_LOOPBACK_ENDPOINTS = ("-endpoint", "-endpointslice", "-endpointslicemirroring")


# The components started after the API server, each with the field of kubeadm.Ports its secure port is in:
# the start waits for them to listen.
SERVING = {"kube-controller-manager": "controller_manager", "kube-scheduler": "scheduler"}
PORT_RETRIES = 3


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` listens on TCP ``port`` (its sockets in /proc): a connection alone would not say
    whose server answered, and the port a component failed to bind is someone else's, listening."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{f[9]}]")
    if not inodes:
        return False
    try:
        fds = list(os.scandir(f"/proc/{pid}/fd"))
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd.path) in inodes:
                return True
        except OSError:
            continue
    return False


class StackFailed(RuntimeError):
    pass


class Stack:
    def __init__(self, workdir: Path, kwok: bool = True, kwok_lease_s: int = 40,
                 overrides: dict[str, dict[str, str]] | None = None,
                 scheduler_backoff_s: int | None = None) -> None:  # fmt: skip
        """``overrides``: flags set on a component's command over kubeadm's ({"kube-controller-manager":
        {"node-monitor-grace-period": "15m"}}); ``kwok_lease_s``: the nodes' lease duration (kwok renews each every
        quarter of it: a longer lease lets kwok hold thousands of nodes, with the grace period above it);
        ``scheduler_backoff_s``: kube-scheduler's podInitialBackoffSeconds and podMaxBackoffSeconds both (None:
        its defaults, 1 and 10): see :func:`compressed_backoff`."""
        self.workdir = Path(workdir).resolve()  # kubeadm takes absolute paths only (certificatesDir, ...)
        self.kwok = kwok
        self.kwok_lease_s = kwok_lease_s
        self.overrides = overrides or {}
        self.scheduler_backoff_s = scheduler_backoff_s
        self.processes = Processes(self.workdir / "logs")
        self.ports: kubeadm.Ports | None = None
        self.timings: dict[str, float] = {}

    @property
    def etc(self) -> Path:
        return self.workdir / "etc" / "kubernetes"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.etc / "admin.conf"

    @property
    def server(self) -> str:
        assert self.ports
        return f"https://127.0.0.1:{self.ports.api}"

    def start(self, timeout_s: float = 60.0) -> Stack:
        missing = binaries.missing(binaries.CONTROL_PLANE + (("kwok",) if self.kwok else ()))
        if missing:
            raise StackFailed(
                f"not built: {', '.join(missing)}; run `make tools` (localcluster/build-tools.sh)"
            )
        # the ports are drawn free, then bound seconds later: a component that finds its port taken (another test
        # of the run drew it meanwhile) fails the start, which is made again, from kubeadm, on ports drawn again
        for attempt in range(PORT_RETRIES + 1):
            try:
                return self._start(timeout_s)
            except (StackFailed, RuntimeError) as e:
                if attempt == PORT_RETRIES or "address already in use" not in str(e):
                    raise
        raise AssertionError("unreachable")

    def _start(self, timeout_s: float) -> Stack:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        # a fresh cluster every start: etcd's data of an earlier run in the same folder (a second `make demo`)
        # would hold its nodes and objects (and its certificates are made again below). Only the folder this
        # stack itself writes is removed.
        if (self.workdir / "etcd" / "member").is_dir():
            shutil.rmtree(self.workdir / "etcd")
        self.ports = kubeadm.Ports(*free_ports(6))
        config = kubeadm.local_config(self.workdir, self.ports)
        commands = kubeadm.phases(self.workdir, config, self.ports)
        for name, flags in (*SINGLE_MEMBER.items(), *QUIET.items()):
            commands[name] = _override(commands[name], flags)
        kcm = commands["kube-controller-manager"]
        controllers = next((a.split("=", 1)[1] for a in kcm if a.startswith("--controllers=")), "*")
        commands["kube-controller-manager"] = _override(
            kcm, {"controllers": ",".join([controllers, *NO_LOOPBACK_ENDPOINTS])}
        )
        for name, flags in self.overrides.items():
            commands[name] = _override(commands[name], flags)
        if self.scheduler_backoff_s is not None:
            config = Path(
                next(a for a in commands["kube-scheduler"] if a.startswith("--config=")).split("=", 1)[1]
            )
            config.write_text(yaml.safe_dump(with_backoff(yaml.safe_load(config.read_text()),
                                                          self.scheduler_backoff_s), sort_keys=False))  # fmt: skip
        self.timings["kubeadm"] = time.monotonic() - t0
        env = {"PATH": binaries.on_path(), "HOME": str(self.workdir)}
        try:
            self.processes.start("etcd", [str(binaries.path("etcd")), *commands["etcd"][1:]], env=env)
            self.processes.start("kube-apiserver", [str(binaries.path("kube-apiserver")),
                                                    *commands["kube-apiserver"][1:]], env=env)  # fmt: skip
            self._wait_ready(timeout_s)
            self.timings["api ready"] = time.monotonic() - t0
            self._admins_binding()
            for name in SERVING:
                self.processes.start(name, [str(binaries.path(name)), *commands[name][1:]], env=env)
            if self.kwok:
                self._start_kwok(env)
            self._wait_serving(timeout_s)
        except BaseException:
            self.stop()
            raise
        self.timings["started"] = time.monotonic() - t0
        self._write_state()
        return self

    def stop(self) -> None:
        self.processes.stop()

    def kubectl(self, *args: str, input: str | None = None, kubeconfig: Path | None = None,
                check: bool = True) -> subprocess.CompletedProcess:  # fmt: skip
        done = subprocess.run(
            [str(binaries.path("kubectl")), "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), *args],
            capture_output=True, text=True, input=input, timeout=120, check=False,
        )  # fmt: skip
        if check and done.returncode:
            raise StackFailed(f"kubectl {' '.join(args[:3])}: {done.stderr.strip()}")
        return done

    def _wait_ready(self, timeout_s: float) -> None:
        ctx = ssl.create_default_context(cafile=str(self.workdir / "pki" / "ca.crt"))
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            self.processes.check()
            try:
                with urllib.request.urlopen(f"{self.server}/readyz", context=ctx, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError as e:
                last = str(e)
            time.sleep(0.2)
        raise StackFailed(f"kube-apiserver not ready after {timeout_s:.0f} s ({last}): "
                          f"{self.processes.tail('kube-apiserver')}")  # fmt: skip

    def _wait_serving(self, timeout_s: float) -> None:
        """Returns once the controller manager and the scheduler listen on their secure ports; a process of the
        stack that exits meanwhile fails the start with its log (a taken port among them, which :meth:`start`
        makes again). Without this wait a controller manager that died at start showed only later, as
        namespaces that never got their "default" ServiceAccount."""
        assert self.ports
        deadline = time.monotonic() + timeout_s
        waiting = dict(SERVING)
        while True:
            self.processes.check()
            for name, field in list(waiting.items()):
                if _listens(self.processes.running[name].pid, getattr(self.ports, field)):
                    del waiting[name]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise StackFailed(f"{', '.join(waiting)} not serving after {timeout_s:.0f} s: "
                                  + " | ".join(self.processes.tail(n) for n in waiting))  # fmt: skip
            time.sleep(0.1)

    def _admins_binding(self) -> None:
        """The ClusterRoleBinding `kubeadm init` creates for admin.conf's group (kubeadm:cluster-admins), made
        with super-admin.conf as kubeadm makes it."""
        body = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": ADMINS_BINDING},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": ADMINS_BINDING}],
        }
        self.kubectl("apply", "-f", "-", input=json.dumps(body), kubeconfig=self.etc / "super-admin.conf")

    def _start_kwok(self, env: dict) -> None:
        stages = sorted(binaries.KWOK_STAGES.glob("*.yaml"))
        if not stages:
            raise StackFailed(f"{binaries.KWOK_STAGES}: kwok's stages are missing; run `make tools`")
        port = free_ports(1)[0]
        argv = [
            str(binaries.path("kwok")),
            f"--kubeconfig={self.admin_kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={KWOK_LABEL}=fake",
            f"--cidr={kubeadm.LOCAL_POD_CIDR}",
            "--node-ip=127.0.0.1",
            f"--server-address=127.0.0.1:{port}",
            f"--node-lease-duration-seconds={self.kwok_lease_s}",
            *(f"--config={s}" for s in stages),
        ]
        self.processes.start("kwok", argv, env=env)

    def _write_state(self) -> None:
        state = {
            "server": self.server,
            "admin_kubeconfig": str(self.admin_kubeconfig),
            "ports": self.ports.__dict__ if self.ports else {},
            "pids": {n: p.pid for n, p in self.processes.running.items()},
            "timings": self.timings,
        }
        (self.workdir / "stack.json").write_text(json.dumps(state, indent=2))


def compressed_backoff(compression: float) -> int | None:
    """kube-scheduler's retry backoff for a stack whose model runs ``compression`` times the wall clock: its
    floor, 1 s, for a compressed run (its default 1 s doubling to 10 s is measured in wall seconds, 10 model
    minutes at 60x, where a cluster on the wall clock waits 10 s: the demo's waits were made of it, issue 33);
    None (the defaults) on the wall clock."""
    return 1 if compression > 1 else None


def with_backoff(config: dict, seconds: int) -> dict:
    """A KubeSchedulerConfiguration retrying unschedulable pods after ``seconds`` every time (1 at the least), its
    client's rate limit (50 requests a second, bursts of 100) raised as :func:`compressed_rates` raises the
    controller manager's."""
    qps, burst = compressed_rates(50, 100)
    connection = {**config.get("clientConnection", {}), "qps": qps, "burst": burst}
    return {**config, "podInitialBackoffSeconds": seconds, "podMaxBackoffSeconds": seconds,
            "clientConnection": connection}  # fmt: skip


COMPRESSED_RATE = 60  # the demo's compression (demos/autoscaler_demo/run.py)


def compressed_rates(qps: int, burst: int) -> tuple[int, int]:
    """A client rate limit (requests a second, burst) for a compressed stack: a limit is wall-clock too, so a
    burst of 44 nodes (their taints, 5 DaemonSets' pods each, their bindings) that a controller manager at its
    default 20 a second clears in seconds, model seconds on a real cluster, took model minutes at 60x."""
    return qps * COMPRESSED_RATE, burst * COMPRESSED_RATE


def compressed_overrides(compression: float) -> dict[str, dict[str, str]]:
    """The controller manager's flags for a compressed stack (see :func:`compressed_rates`); none on the wall
    clock."""
    if compression <= 1:
        return {}
    qps, burst = compressed_rates(20, 30)
    return {"kube-controller-manager": {"kube-api-qps": str(qps), "kube-api-burst": str(burst)}}


def _override(argv: list[str], flags: dict[str, str]) -> list[str]:
    """``argv`` with each ``--flag=value`` of ``flags`` replacing the flag's value (or appended)."""
    kept = [a for a in argv if not any(a.startswith(f"--{k}=") for k in flags)]
    return [*kept, *(f"--{k}={v}" for k, v in flags.items())]


def kubeconfig_servers(path: Path) -> list[str]:
    doc = yaml.safe_load(Path(path).read_text())
    return [c["cluster"]["server"] for c in doc.get("clusters") or ()]


def environment(stack: Stack) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(stack.admin_kubeconfig), "PATH": binaries.on_path()}
