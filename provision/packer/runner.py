"""Run Packer through packer-py, streaming its machine-readable output to a progress callback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from packerpy import PackerExecutable

from clusterspec.errors import UserError

_COMMA = "%!(PACKER_COMMA)"
_AMI = re.compile(r"^(?P<region>[a-z0-9-]+):(?P<ami>ami-[0-9a-f]+)$")


def packer_path() -> str:
    """The packer on PATH; packer-py's own default (/usr/local/packer) is wrong on every system we use."""
    found = shutil.which("packer")
    if not found:
        raise UserError(
            "packer: not found on PATH; install it with `make tools` (Debian's packer 1.6.6 works)"
        )
    return found


def packer_version(path: str) -> tuple[int, ...]:
    _, out, _ = PackerExecutable(executable_path=path, machine_readable=False).version()
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", out.decode())
    if not m:
        raise UserError(f"{path}: cannot tell the Packer version from {out.decode().strip()!r}")
    return tuple(int(p) for p in m.groups())


@dataclass
class Event:
    """One machine-readable line: ``timestamp,target,type,data...``."""

    target: str
    kind: str
    data: list[str]

    @classmethod
    def parse(cls, line: str) -> Event | None:
        parts = line.rstrip("\n").split(",")
        if len(parts) < 3 or not parts[0].isdigit():
            return None
        return cls(parts[1], parts[2], [p.replace(_COMMA, ",").replace("\\n", "\n") for p in parts[3:]])

    @property
    def message(self) -> str | None:
        """The human-readable text of a ``ui`` line (say, message, error)."""
        return self.data[1] if self.kind == "ui" and len(self.data) > 1 else None


@dataclass
class BuildResult:
    returncode: int
    amis: dict[str, str] = field(default_factory=dict)  # region -> AMI id
    errors: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


@contextmanager
def _environment(overrides: dict[str, str]) -> Iterator[None]:
    """packer-py starts Packer with this process's environment: set ``overrides`` for the build only."""
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build(
    template_dir: Path,
    var_file: Path,
    only: str,
    *,
    executable: str | None = None,
    env: dict[str, str] | None = None,
    on_event: Callable[[Event], None] = lambda e: None,
) -> BuildResult:
    """``packer build -only=<only> -var-file=<var_file> <template_dir>``; each output line goes to ``on_event``."""
    exe = executable or packer_path()
    read_fd, write_fd = os.pipe()
    packer = PackerExecutable(executable_path=exe, config={"stdout": write_fd, "stderr": subprocess.STDOUT})
    result = BuildResult(returncode=-1)

    def run() -> None:
        try:
            rc, _, _ = packer.build(str(template_dir), only=only, var_file=str(var_file), color="false")
            result.returncode = rc
        except OSError as e:  # packer could not be started
            result.errors.append(f"cannot run {exe}: {e.strerror}")
        finally:
            os.close(write_fd)  # the child has exited: the reader sees end of file after the last line

    with _environment(env or {}):
        worker = threading.Thread(target=run, name="packer-build")
        worker.start()
        with os.fdopen(read_fd, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                result.log.append(line.rstrip("\n"))
                event = Event.parse(line)
                if event is None:
                    continue
                if event.kind == "artifact" and event.data[1:2] == ["id"]:
                    for item in event.data[2].split(","):
                        if m := _AMI.match(item.strip()):
                            result.amis[m["region"]] = m["ami"]
                if event.kind == "ui" and event.data[:1] == ["error"]:
                    result.errors.append(event.data[1].strip())
                on_event(event)
        worker.join()
    return result
