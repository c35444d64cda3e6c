"""Failures as lab's podFailurePolicy says (labctl/jobs.py), through the emulator's Job controller: a node lost under
a job is a disruption (the pod gets DisruptionTarget) and the job goes on with a replacement, up to --retries
times; an application error (a non-zero exit of the code itself, run as a process) fails the job at once."""

from __future__ import annotations

import time

import pytest

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from autoscaler.model.adapters import ModelCloud
from labctl.cli import main
from tests.labctl.conftest import SPEC_DATA, make_bucket, publish_settings

from autoscaler.model.spec_groups import groups_from_spec  # noqa: E402  isort: skip

GROUP = "dlr-us-west-2-gpu-t4"


def _lab(capsys, *argv: str) -> int:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    capsys.readouterr()
    return e.value.code


def _job(emu, name: str) -> dict:
    with emu.model.lock:
        return emu.model.store.get("jobs", "u-alice", name)


def _pods(emu, name: str) -> list[dict]:
    with emu.model.lock:
        return [p for p in emu.model.store.list("pods", "u-alice")
                if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == name]  # fmt: skip


def _lose_the_node(emu, name: str) -> dict:
    """The running pod's instance goes away (spot reclaimed, hardware lost): its node and pod with it. Returns the
    pod as it failed."""
    with emu.model.lock:
        (pod,) = [p for p in _pods(emu, name) if p["status"].get("phase") == "Running"]
        node = pod["spec"]["nodeName"]
        inst = emu.model._node_instance[node]
        ModelCloud(emu.model).terminate_instance(inst.group, inst.id)
        emu.model.advance(emu.model.now() + 5)
        failed = emu.model.store.get("pods", "u-alice", pod["metadata"]["name"])
        ModelCloud(emu.model).set_desired(inst.group, 1)  # the autoscaler's part: a node for the replacement
        emu.model.advance(emu.model.now() + 1200)
    return failed


def test_a_lost_node_is_retried_and_the_retries_are_bounded(emu, lab_env, project, capsys) -> None:
    assert _lab(capsys, "--kubeconfig", lab_env, "submit", "--gpus", "1", "--gpu-type", "T4", "--retries", "2",
                "--name", "spot", "--path", str(project), "--", "python", "train.py") == 0  # fmt: skip
    with emu.model.lock:
        ModelCloud(emu.model).set_desired(GROUP, 1)
        emu.model.advance(emu.model.now() + 1200)
    for attempt in (1, 2):
        failed = _lose_the_node(emu, "spot")
        assert failed["status"]["phase"] == "Failed"
        assert any(c["type"] == "DisruptionTarget" for c in failed["status"]["conditions"])
        job = _job(emu, "spot")
        assert job["status"].get("failed") == attempt and not any(
            c["type"] == "Failed" for c in job["status"].get("conditions") or ()
        )  # counted, replaced: the job goes on
        assert any(p["status"]["phase"] == "Running" for p in _pods(emu, "spot"))
    _lose_the_node(emu, "spot")  # the third disruption is one more than --retries 2
    conds = {c["type"]: c for c in _job(emu, "spot")["status"].get("conditions") or ()}
    assert conds["Failed"]["reason"] == "BackoffLimitExceeded"


def test_an_application_error_fails_the_job_at_once(
    s3_url, tmp_path, monkeypatch, capsys, kubelet_root
) -> None:
    make_bucket(s3_url)
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), groups_from_spec(SPEC_DATA))
    with Emulator(model, run_pods=kubelet_root) as emu:
        publish_settings(emu, s3_url, tmp_path / "admin")
        emu.create_namespace("u-alice")
        kubeconfig = emu.write_kubeconfig(tmp_path / "kc")
        for k in ("LAB_SETTINGS", "LAB_REGISTRY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("LAB_ENGINE", "")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        proj = tmp_path / "proj"
        proj.mkdir()
        (proj / "train.py").write_text("import sys\nprint('diverged')\nsys.exit(3)\n")
        with model.lock:
            ModelCloud(model).set_desired(GROUP, 1)
            model.advance(model.now() + 1200)
        assert _lab(capsys, "--kubeconfig", str(kubeconfig), "-n", "u-alice", "submit", "--gpus", "1", "--gpu-type",
                    "T4", "--name", "bug", "--path", str(proj), "--", "python", "train.py") == 0  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with model.lock:
                model.advance(model.now() + 1)
                conds = {c["type"]: c for c in _job(emu, "bug")["status"].get("conditions") or ()}
            if "Failed" in conds:
                break
            time.sleep(0.2)
        assert conds["Failed"]["reason"] == "PodFailurePolicy"
        assert "exit code 3 matching FailJob rule at index 1" in conds["Failed"]["message"]
        assert len(_pods(emu, "bug")) == 1  # never retried
