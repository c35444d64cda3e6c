"""Helpers shared by the tests."""

from __future__ import annotations

import copy
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def require_tool(name: str, path: str | None = None) -> str:
    """The tool's path; skips with a reason when it is absent, or fails under CI=true (CI installs it)."""
    found = path if path and os.access(path, os.X_OK) else shutil.which(name)
    if found:
        return found
    reason = f"{name} is not installed (run `make tools`)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + "; CI must have it")
    pytest.skip(reason)


def aws_cli() -> str:
    """The aws CLI itself, for scripts run with a bare environment (a pyenv shim needs pyenv's)."""
    found = shutil.which("aws") or require_tool("aws", str(ROOT / ".awscli-venv" / "bin" / "aws"))
    if "/shims/" in found:
        import subprocess

        found = subprocess.run(
            ["pyenv", "which", "aws"], capture_output=True, text=True, check=True
        ).stdout.strip()
    return found


def load_yaml(path: Path):
    """A YAML file of test data with libyaml's safe loader (the cases load in a tenth of the pure-Python time)."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def example_spec_data() -> dict:
    """The repository's cluster.yaml as plain data (anchors expanded), safe to modify."""
    return copy.deepcopy(load_yaml(ROOT / "cluster.yaml"))


def set_path(data: dict, path: str, value) -> None:
    """Set ``a.b.0.c`` in nested data; a trailing ``+`` appends to a list; value ``__delete__`` removes."""
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = data
    for p in parts[:-1]:
        node = node[p]
    last = parts[-1]
    if last == "+":
        node.append(value)
    elif value == "__delete__":
        del node[last]
    else:
        node[last] = value


def require_standard_venv() -> str:
    """The standard image's venv on this host (localcluster/kubelet/images.py STANDARD_VENV), which every uid can run:
    where the tests run as root, a job's pods run as the Job's uid only with it. Skips with a reason when it is
    absent, or fails under CI=true (`make tools` builds it)."""
    from localcluster.kubelet import images as kubelet

    if os.geteuid() != 0 or kubelet.standard_bin() != kubelet.VENV_BIN:
        return kubelet.standard_bin()
    reason = f"the standard image's venv ({kubelet.STANDARD_VENV}) is missing: `make tools` builds it"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + "; CI must have it")
    pytest.skip(reason)


def wait_until(check, timeout_s: float = 30.0, what: str = "condition", step: float = 0.2):
    """A correctness wait for real processes and controllers (a bound on how long something may take, never a
    performance figure): ``check()``'s first truthy value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s:g} s: {what}")
        time.sleep(step)
