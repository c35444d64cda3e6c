"""Nothing a job prints is lost (issue 37): its pods run as processes by the emulator's kubelet, as in
test_failures.py. A failed requirement shows the deps step's own output and reason; `lab logs -f` waits through
start-up and ends with the command's exit status; a pod that is gone (the Job failed, its node given back) is read
from $LOG_DIR, where labctl/entry.py tees every rank's output; --keep copies ./out there."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from autoscaler.model.adapters import ModelCloud
from labctl.cli import main
from tests.labctl.conftest import SPEC_DATA, make_bucket, make_wheel, publish_settings
from tests.support import require_standard_venv

from autoscaler.model.spec_groups import groups_from_spec  # noqa: E402  isort: skip

GROUP = "dlr-us-west-2-gpu-t4"


@pytest.fixture
def local(s3_url, tmp_path, monkeypatch, kubelet_root):
    require_standard_venv()
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
        monkeypatch.setenv("LAB_USER", "alice")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        with model.lock:
            ModelCloud(model).set_desired(GROUP, 1)
            model.advance(model.now() + 1200)
        proj = tmp_path / "proj"
        proj.mkdir()
        yield emu, proj, kubelet_root


def _lab(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["-n", "u-alice", *argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def _submit(capsys, proj: Path, name: str, *command: str, options: tuple[str, ...] = ()) -> None:
    code, _, err = _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "T4", "--name", name,
                        "--path", str(proj), *options, "--", *command)  # fmt: skip
    assert code == 0, err


def _finished(emu, name: str, timeout_s: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with emu.model.lock:
            emu.model.advance(emu.model.now() + 1)
            job = emu.model.store.get("jobs", "u-alice", name)
        if any(
            c["type"] in ("Complete", "Failed") for c in (job.get("status") or {}).get("conditions") or ()
        ):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {name} did not finish")


def _pods(emu, name: str) -> list[dict]:
    with emu.model.lock:
        return [p for p in emu.model.store.list("pods", "u-alice")
                if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == name]  # fmt: skip


def test_a_failed_requirement_shows_the_deps_steps_output_and_reason(local, capsys) -> None:
    emu, proj, _ = local
    (proj / "wheels").mkdir()
    make_wheel(proj / "wheels" / "tinydep-0.1-py3-none-any.whl")
    (proj / "requirements.txt").write_text("./wheels/tinydep-0.2-py3-none-any.whl\n")  # a typo
    (proj / "train.py").write_text("import tinydep\n")
    _submit(capsys, proj, "typo", "python", "train.py")
    _finished(emu, "typo")
    code, out, err = _lab(capsys, "logs", "typo")
    assert code == 1, (out, err)
    # pip's own words where the cluster serves an init container's log or its termination message; the
    # emulator's kubelet serves neither yet (localcluster/'s real kubelet does)
    assert "tinydep-0.2-py3-none-any.whl" in out or "its output cannot be read" in out
    assert err == ("lab: job 'typo': its deps step (installing its requirements) failed with exit code 1 (Error) "
                   "before the command ran; its output is above\n")  # fmt: skip
    assert _lab(capsys, "logs", "typo", "-f")[0] == 1
    code, out, _ = _lab(capsys, "status")
    assert "its deps step (installing its requirements) failed with exit code 1 (Error) on typo-0-" in out


def test_follow_waits_through_start_up_and_ends_with_the_commands_status(local, capsys) -> None:
    emu, proj, _ = local
    (proj / "train.py").write_text("import sys\nprint('diverged')\nsys.exit(3)\n")
    _submit(capsys, proj, "bug", "python", "train.py")
    import threading

    def tick() -> None:  # the cluster's clock goes on while lab follows
        while not done.is_set():
            with emu.model.lock:
                emu.model.advance(emu.model.now() + 1)
            time.sleep(0.2)

    done = threading.Event()
    threading.Thread(target=tick, daemon=True).start()
    try:
        code, out, err = _lab(capsys, "logs", "bug", "-f")
    finally:
        done.set()
    assert (code, out) == (3, "diverged\n"), err
    assert err.endswith("lab: job bug: its command exited with code 3\n")
    _finished(emu, "bug")
    code, out, _ = _lab(capsys, "status")
    (line,) = out.splitlines()[1:]
    assert line.split()[1] == "Failed" and "exit code 3 (Error) on bug-0-" in line


def test_a_gone_pod_is_read_from_log_dir(local, capsys) -> None:
    emu, proj, kubelet = local
    (proj / "train.py").write_text(
        "import os, sys\nos.makedirs('out', exist_ok=True)\nopen('out/ckpt.pt', 'w').write('w')\n"
        "print('diverged', flush=True)\nsys.exit(3)\n"
    )
    _submit(capsys, proj, "lost", "python", "train.py", options=("--keep", "out"))
    _finished(emu, "lost")
    kept = kubelet / "claims" / "u-alice_results" / "lost"
    assert (kept / "out" / "ckpt.pt").read_text() == "w"  # --keep out: next to the code, kept
    assert "diverged" in (kept / "logs" / "node-0.log").read_text()
    for pod in _pods(emu, "lost"):  # the node given back, the pods with it
        with emu.model.lock:
            emu.model.delete("pods", "u-alice", pod["metadata"]["name"])

    import threading

    done = threading.Event()

    def tick() -> None:  # the reader pod runs on the cluster's clock
        while not done.is_set():
            with emu.model.lock:
                emu.model.advance(emu.model.now() + 1)
            time.sleep(0.2)

    threading.Thread(target=tick, daemon=True).start()
    try:
        code, out, err = _lab(capsys, "logs", "lost")
        every = _lab(capsys, "logs", "lost", "--all")  # --all reads the gone pods the same way
    finally:
        done.set()
    assert code == 0, err
    assert "diverged" in out and "--- lab: exit 3" in out
    assert "the pod of index 0 is gone; its output kept in /results/lost/logs/node-0.log" in err
    assert every[0] == 0, every[2]
    assert "[node 0] diverged\n" in every[1] and "the pod of index 0 is gone" in every[2]
    assert not [p for p in _pods(emu, "lost")]
