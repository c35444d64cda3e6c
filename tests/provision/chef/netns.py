"""Network namespaces for the daemon tests: each test gets its own, with veth links and processes that are
all removed afterwards. Only addresses inside these namespaces are used (documentation ranges, 169.254/16)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest


def require_netns() -> None:
    """Skips (fails under CI=true) when this process cannot create network namespaces."""
    reason = None
    if os.geteuid() != 0 or not shutil.which("ip"):
        reason = "network namespaces need root and iproute2"
    else:
        probe = f"probe{uuid.uuid4().hex[:8]}"
        made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        if made.returncode != 0:
            reason = f"cannot create a network namespace here: {made.stderr.strip()}"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must provide them")
        pytest.skip(reason)


class Lab:
    """Namespaces, links and background processes of one test; ``close`` removes them all."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:6]
        self.dir = Path(tempfile.mkdtemp(prefix=f"ns{self.tag}-", dir="/tmp"))  # short: unix sockets
        self.namespaces: list[str] = []
        self.processes: list[subprocess.Popen] = []

    def ns(self, role: str) -> str:
        name = f"t{self.tag}{role}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        self.namespaces.append(name)
        self.run(name, "ip", "link", "set", "lo", "up")
        return name

    def run(
        self, ns: str, *cmd: str, env: dict | None = None, check: bool = True
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["ip", "netns", "exec", ns, *cmd],
            capture_output=True,
            text=True,
            timeout=60,
            env=(os.environ | env) if env else None,
        )
        if check:
            assert result.returncode == 0, f"{' '.join(cmd)}: {result.stdout}{result.stderr}"
        return result

    def link(self, ns_a: str, name_a: str, addr_a: str, ns_b: str, name_b: str, addr_b: str) -> None:
        """A veth pair between two namespaces, each end with its address (CIDR notation) and up."""
        tmp_a, tmp_b = f"v{uuid.uuid4().hex[:10]}", f"v{uuid.uuid4().hex[:10]}"
        subprocess.run(["ip", "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b], check=True)
        for tmp, ns, name, addr in ((tmp_a, ns_a, name_a, addr_a), (tmp_b, ns_b, name_b, addr_b)):
            subprocess.run(["ip", "link", "set", tmp, "netns", ns], check=True)
            self.run(ns, "ip", "link", "set", tmp, "name", name)
            self.run(ns, "ip", "addr", "add", addr, "dev", name)
            self.run(ns, "ip", "link", "set", name, "up")

    def start(self, ns: str, *cmd: str, env: dict | None = None, log: str = "daemon") -> subprocess.Popen:
        out = open(self.dir / f"{log}.log", "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=os.environ | (env or {}),
        )
        self.processes.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.processes:
            proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(what: str, check, timeout: float = 30.0, interval: float = 0.5):
    """Polls ``check`` until it returns something truthy; fails with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")
