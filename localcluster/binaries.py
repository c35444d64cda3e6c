"""Where the local cluster's binaries are (``make tools`` builds them: localcluster/build-tools.sh) and what
version each reports."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("LOCALCLUSTER_BIN", ROOT / ".cache" / "localcluster" / "bin"))
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubeadm", "kubectl")
ALL = (*CONTROL_PLANE, "kwok", "scheduler", "kubelet-streaming")
KWOK_STAGES = BIN.parent / "kwok-stages"


class Missing(RuntimeError):
    """A binary ``make tools`` builds is not there."""


def path(name: str) -> Path:
    exe = BIN / name
    if not os.access(exe, os.X_OK):
        raise Missing(f"{exe}: not built; run `make tools` (localcluster/build-tools.sh builds it from "
                      f"localcluster/go/, about 12 minutes cold on 2 cores)")  # fmt: skip
    return exe


def missing(names=CONTROL_PLANE) -> list[str]:
    return [n for n in names if not os.access(BIN / n, os.X_OK)]


def version(name: str) -> str:
    """The version the binary reports of itself (``--version`` or ``version``)."""
    exe = str(path(name))
    args = {
        "kubeadm": [exe, "version", "-o", "short"],
        "kubectl": [exe, "version", "--client", "-o", "yaml"],
        "kwok": [exe, "--version"],
        "etcd": [exe, "--version"],
    }.get(name, [exe, "--version"])
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    text = (done.stdout or done.stderr).strip()
    if name == "kubectl":
        for line in text.splitlines():
            if line.strip().startswith("gitVersion:"):
                return line.split(":", 1)[1].strip()
    return text.splitlines()[0] if text else ""


def on_path() -> str:
    """A PATH with the local cluster's binaries first (kubectl 1.35, not Debian's 1.32)."""
    return f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def which(name: str) -> str | None:
    exe = BIN / name
    return str(exe) if os.access(exe, os.X_OK) else shutil.which(name)
