"""The local cluster's processes: started in their own session with their output in a log file each, stopped
together (SIGTERM, then SIGKILL after a grace period)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_FLOOR = 10_000  # below it: the well-known and registered ports other software expects to find free
_random = random.Random()


def _ephemeral_low() -> int:
    try:
        return int(PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default net.ipv4.ip_local_port_range


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 now, for servers that bind them a moment later.

    They are drawn at random from below the kernel's ephemeral range: a port of that range, as ``bind(0)`` gives
    it, is free only until the kernel hands it to the next outgoing connection or ``bind(0)`` of any process, and
    between the choice and the server's bind (seconds, for a torchrun worker importing torch) a busy test run beside
    it opens thousands. Below the range only another explicit choice can take it. Where the range starts too low to
    leave room, ``bind(0)``."""
    low = _ephemeral_low()
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        tries = 0
        while len(ports) < n:
            s = socket.socket()
            socks.append(s)
            if low - _FLOOR >= 1_000 and tries < 200:
                tries += 1
                port = _random.randrange(_FLOOR, low)
                if port in ports:
                    continue
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue  # in use, or in TIME_WAIT
            else:
                s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def free_port() -> int:
    """One port, as :func:`free_ports`."""
    return free_ports(1)[0]


class Processes:
    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.logs.mkdir(parents=True, exist_ok=True)
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 (the child keeps it)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)  # fmt: skip
        log.close()
        self.running[name] = proc
        return proc

    def check(self) -> None:
        """RuntimeError naming a process that exited, with the last lines of its log."""
        for name, proc in self.running.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: {self.tail(name)}")

    def tail(self, name: str, lines: int = 5) -> str:
        try:
            text = (self.logs / f"{name}.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " / ".join(text[-lines:])

    def stop(self, grace_s: float = 5.0) -> None:
        for proc in reversed(list(self.running.values())):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in self.running.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        self.running.clear()
