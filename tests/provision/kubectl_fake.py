"""A stand-in kubectl for the deploy tasks' tests (the real one is never run against a cluster here): `version`
answers with a server version or kubectl's refusal, `apply` exits as told (with the server's complaint when it
fails), and every call is logged."""

from __future__ import annotations

import json
import stat
from pathlib import Path

SERVER = json.dumps({"clientVersion": {}, "serverVersion": {"gitVersion": "v1.35.0"}})
REFUSED = "The connection to the server localhost:8080 was refused - did you specify the right host or port?"


def fake_kubectl(directory: Path, reachable: bool = True, apply_exit: int = 0) -> tuple[str, Path]:
    """``DIRECTORY/kubectl`` and the log of its calls (one line of arguments each)."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "kubectl.calls"
    version = f"echo '{SERVER}'" if reachable else f"echo '{REFUSED}' >&2; exit 1"
    apply = f"echo 'error: the server rejected it' >&2; exit {apply_exit}" if apply_exit else "exit 0"
    exe = directory / "kubectl"
    exe.write_text(
        f'#!/bin/sh\necho "$@" >>{log}\ncase "$1" in\n  version) {version} ;;\n  apply) {apply} ;;\nesac\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe), log


def applies(log: Path) -> list[str]:
    """The `kubectl apply` calls in the log, in order."""
    return [line for line in log.read_text().splitlines() if line.startswith("apply")] if log.exists() else []
