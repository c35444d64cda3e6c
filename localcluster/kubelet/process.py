"""One run of a container as a process: its own session (so its children go with it), its stdout and stderr copied
line by line into its log file in the CRI format that containerd writes and the kubelet reads
(``<RFC 3339 nano> <stream> F <line>``, pkg/kubelet/kuberuntime/logs), one file per run so ``previous`` has one."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from localcluster.kubelet.containers import Spec


def stamp(t: float | None = None) -> str:
    """RFC 3339 with nanoseconds, as the CRI log lines and the kubelet's ``timestamps`` carry."""
    t = time.time() if t is None else t
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def iso(t: float) -> str:
    """A status time (``metav1.Time``: seconds)."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Run:
    """A container's run: started at ``started`` (wall), finished with ``exit_code`` (128+n when killed by n)."""

    n: int
    log: Path
    started: float
    popen: subprocess.Popen | None = None
    finished: float | None = None  # wall time
    finished_mono: float | None = None
    exit_code: int | None = None
    message: str = ""
    clock: Callable[[], float] = time.monotonic  # the kubelet's clock, for the back-off
    _copiers: list[threading.Thread] = field(default_factory=list)

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    def poll(self) -> bool:
        """Whether it has finished (its output copied to the end)."""
        if self.exit_code is not None:
            return True
        if self.popen is None or self.popen.poll() is None:
            return False
        for t in self._copiers:
            t.join(timeout=1)  # the pipes close when the process (and its children) are gone
        code = self.popen.returncode
        self.exit_code = 128 - code if code < 0 else code
        self.finished, self.finished_mono = time.time(), self.clock()
        return True

    def signal(self, sig: int) -> None:
        if self.popen is not None and self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, sig)


def _copy(pipe, stream: str, log: Path, lock: threading.Lock) -> None:
    with pipe, open(log, "ab") as out:
        for line in iter(pipe.readline, b""):
            partial = not line.endswith(b"\n")
            body = line[:-1] if not partial else line
            with lock:
                out.write(f"{stamp()} {stream} {'P' if partial else 'F'} ".encode() + body + b"\n")
                out.flush()


def start(spec: Spec, n: int, logs: Path, chown: Path | None = None, clock=time.monotonic) -> Run:
    """Starts ``spec`` as run ``n``; a process that cannot start is a run finished with 128 and the reason."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{n}.log"
    log.touch()
    run = Run(n, log, time.time(), clock=clock)
    kwargs: dict = {}
    if spec.user is not None and os.geteuid() == 0:
        kwargs.update(user=spec.user[0], group=spec.user[1], extra_groups=[])
        if chown is not None:
            for p in [chown, *chown.rglob("*")]:
                if "claims" not in p.parts:
                    with contextlib.suppress(OSError):
                        os.chown(p, spec.user[0], spec.user[1])
    try:
        try:
            popen = subprocess.Popen(spec.argv, env=spec.env, cwd=spec.cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
                                     **kwargs)  # fmt: skip
        except PermissionError:
            if not kwargs:
                raise
            # this image's interpreter is out of that uid's reach (under /root, say): run as ours, and say so
            run.message = f"ran as uid {os.geteuid()}: uid {spec.user[0]} may not run {spec.argv[0]}"
            popen = subprocess.Popen(spec.argv, env=spec.env, cwd=spec.cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    except OSError as e:
        with open(log, "ab") as out:
            out.write(f"{stamp()} stderr F {e}\n".encode())
        run.exit_code, run.message = 128, str(e)
        run.finished, run.finished_mono = time.time(), clock()
        return run
    run.popen = popen
    lock = threading.Lock()
    for pipe, stream in ((popen.stdout, "stdout"), (popen.stderr, "stderr")):
        t = threading.Thread(
            target=_copy, args=(pipe, stream, log, lock), daemon=True, name=f"log-{spec.name}"
        )
        t.start()
        run._copiers.append(t)
    return run
