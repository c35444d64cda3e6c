"""One local control plane shared by every process of a test run, as controller-runtime's envtest shares its
API server: the first process to ask starts it (under a file lock), the others attach to it through its state
file, and whoever owns the run stops it (:func:`stop_at`). Tests keep to their own namespaces and name their
cluster-scoped objects per test."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from localcluster import binaries
from localcluster.stack import Stack

STATE = "stack.json"
_HELD: dict[str, list] = {}  # singleton name -> [depth, lock] in this process


@dataclass
class Cluster:
    """A running local control plane as its users see it."""

    workdir: Path
    server: str
    admin_kubeconfig: Path

    def kubectl(self, *args: str, input: str | None = None, kubeconfig: Path | None = None,
                check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess:  # fmt: skip
        done = subprocess.run(
            [str(binaries.path("kubectl")), "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), *args],
            capture_output=True, text=True, input=input, timeout=timeout, check=False,
        )  # fmt: skip
        if check and done.returncode:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done

    def unique(self, prefix: str) -> str:
        """A name no other test of the run uses (namespaces, cluster-scoped objects)."""
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    @contextmanager
    def singleton(self, name: str):
        """Held while a test writes or reads an object every test of the run shares under one fixed name (the lab
        settings in kube-public, which `lab` finds by that name and every ``add-user`` rewrites from its spec):
        one test at a time across the run's processes; re-entrant within a process."""
        held = _HELD.setdefault(name, [0, threading.RLock()])
        with held[1]:
            if held[0]:
                held[0] += 1
                try:
                    yield
                finally:
                    held[0] -= 1
                return
            with _locked(self.workdir / f"singleton-{name}.lock"):
                held[0] = 1
                try:
                    yield
                finally:
                    held[0] = 0

    def namespace(self, prefix: str = "t", labels: dict[str, str] | None = None) -> str:
        name = self.unique(prefix)
        meta = {"name": name, **({"labels": labels} if labels else {})}
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}
        self.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
        # the ServiceAccount admission refuses pods until the controller-manager has made "default" (a real race:
        # a namespace is usable for pods a moment after it is created)
        deadline = time.monotonic() + 30
        while self.kubectl("-n", name, "get", "serviceaccount", "default").returncode:
            if time.monotonic() > deadline:
                raise AssertionError(f"namespace {name}: no default ServiceAccount after 30 s; "
                                     f"{self.controller_manager()}")  # fmt: skip
            time.sleep(0.2)
        return name

    def controller_manager(self) -> str:
        """The controller manager as this stack started it (it makes every namespace's "default"
        ServiceAccount): running or not, and the last lines of its log."""
        try:
            pid = json.loads((self.workdir / STATE).read_text())["pids"]["kube-controller-manager"]
        except (OSError, ValueError, KeyError) as e:
            return f"the controller manager's pid is unknown ({e})"
        state = f"the controller manager (pid {pid}) {'is running' if _alive(pid) else 'has exited'}"
        try:
            lines = (
                (self.workdir / "logs" / "kube-controller-manager.log")
                .read_text(errors="replace")
                .splitlines()
            )
        except OSError as e:
            return f"{state}; its log: {e}"
        return f"{state}; its log ends: " + " / ".join(lines[-8:])


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: a process that exited and was not yet reaped by its parent (a zombie, state Z) has
    not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def attach_or_start(folder: Path) -> Cluster:
    """The run's control plane under ``folder``: attached to when running, started otherwise."""
    workdir = folder / "localcluster"
    with _locked(folder / "localcluster.lock"):
        state_file = workdir / STATE
        if state_file.exists():
            state = json.loads(state_file.read_text())
            if all(_alive(p) for p in state["pids"].values()):
                return Cluster(workdir, state["server"], Path(state["admin_kubeconfig"]))
            stop_at(folder)
        stack = Stack(workdir).start()
        return Cluster(workdir, stack.server, stack.admin_kubeconfig)


def stop_at(folder: Path, grace_s: float = 5.0) -> None:
    """Stops the control plane whose state is under ``folder`` (by its processes' groups)."""
    state_file = folder / "localcluster" / STATE
    if not state_file.exists():
        return
    pids = list(json.loads(state_file.read_text())["pids"].values())
    for pid in reversed(pids):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    state_file.unlink(missing_ok=True)
