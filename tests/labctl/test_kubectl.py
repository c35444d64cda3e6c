"""kubectl, an independent client, on what `lab submit` creates in the emulator: the Job and its Indexed pods
are listed through discovery, and deleting the Job takes its pods."""

from __future__ import annotations

import json
import subprocess

import pytest

from labctl.cli import main
from tests.support import require_tool

pytestmark = pytest.mark.tool


def _kubectl(kubeconfig: str, *argv: str) -> str:
    kubectl = require_tool("kubectl")
    proc = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, *argv], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_kubectl_sees_the_job_and_its_pods_and_deletes_them(emu, lab_env, project, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "4", "--nodes", "3", "--name", "sweep",
              "--path", str(project), "--", "python", "train.py"])  # fmt: skip
    job = json.loads(_kubectl(lab_env, "get", "job", "sweep", "-n", "u-alice", "-o", "json"))
    assert job["spec"]["completionMode"] == "Indexed" and job["status"]["active"] == 3
    pods = json.loads(_kubectl(lab_env, "get", "pods", "-n", "u-alice", "-l", "batch.kubernetes.io/job-name=sweep",
                               "-o", "json"))["items"]  # fmt: skip
    assert sorted(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods) == [
        "0",
        "1",
        "2",
    ]
    assert "sweep" in _kubectl(lab_env, "get", "svc", "-n", "u-alice")
    _kubectl(lab_env, "delete", "job", "sweep", "-n", "u-alice")
    assert json.loads(_kubectl(lab_env, "get", "pods", "-n", "u-alice", "-o", "json"))["items"] == []
