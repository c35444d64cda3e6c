"""The demo's child processes: started in their own session, logged to files, always stopped.

Each child runs in a new session (its own process group), so a Ctrl-C in the terminal reaches only the demo,
which then stops its children itself, in reverse order: SIGTERM to the child's group, SIGKILL after a grace
period. Only processes this module started are ever signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path


class ChildError(Exception):
    """A child did not start: one line naming it and its log."""


class Child:
    def __init__(self, name: str, argv: list[str], log_dir: Path, env: dict[str, str] | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_dir / f"{name}.log"
        self.out_path = log_dir / f"{name}.out"
        self._env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None

    def start(self) -> Child:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as err, self.out_path.open("wb") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=self._env,
                start_new_session=True,
            )
        return self

    def ready_line(self, timeout_s: float) -> dict:
        """The first stdout line, a JSON object the child prints when it is ready."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.out_path.read_text() if self.out_path.exists() else ""
            if text.endswith("\n"):
                return json.loads(text.splitlines()[0])
            if self.proc is not None and self.proc.poll() is not None:
                raise ChildError(
                    f"{self.name} exited with status {self.proc.returncode}; see {self.log_path}"
                )
            time.sleep(0.1)
        raise ChildError(f"{self.name} was not ready after {timeout_s:.0f} s; see {self.log_path}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)  # the child's own group (start_new_session)

    def stop(self, grace_s: float = 5.0) -> None:
        if self.proc is None:
            return
        pid = self.proc.pid
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait(5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # anything the child left behind in its group


class Children:
    """Every child the demo started; ``stop_all`` in reverse start order (also on Ctrl-C and SIGTERM)."""

    def __init__(self) -> None:
        self.started: list[Child] = []

    def start(self, child: Child) -> Child:
        self.started.append(child.start())
        return child

    def stop_all(self) -> None:
        for child in reversed(self.started):
            child.stop()

    def __enter__(self) -> Children:
        self._old = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop_all()
        finally:
            signal.signal(signal.SIGTERM, self._old)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
