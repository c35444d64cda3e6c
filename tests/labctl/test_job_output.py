"""Nothing a job prints is lost (issue 37), on the real local cluster (tests/labctl/real_lab.py): the pods run as
processes by the process kubelet, their logs served through the API server. A failed requirement shows the deps
step's own output and reason; `lab logs -f` waits through start-up and ends with the command's exit status; a pod
that is gone (the Job failed, its node given back) is read from $LOG_DIR, where labctl/entry.py tees every rank's
output, by a reader pod on a CPU node; --keep copies ./out there."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.cli import main
from tests.labctl.conftest import make_wheel

pytestmark = pytest.mark.e2e


@pytest.fixture
def local(lab_on_real, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    return lab_on_real, proj


def _lab(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["-n", "u-alice", *argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def _submit(capsys, proj: Path, name: str, *command: str, options: tuple[str, ...] = ()) -> None:
    code, _, err = _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "T4", "--name", name,
                        "--path", str(proj), *options, "--", *command)  # fmt: skip
    assert code == 0, err


def test_a_failed_requirement_shows_the_deps_steps_output_and_reason(local, capsys) -> None:
    lab, proj = local
    (proj / "wheels").mkdir()
    make_wheel(proj / "wheels" / "tinydep-0.1-py3-none-any.whl")
    (proj / "requirements.txt").write_text("./wheels/tinydep-0.2-py3-none-any.whl\n")  # a typo
    (proj / "train.py").write_text("import tinydep\n")
    _submit(capsys, proj, "typo", "python", "train.py")
    lab.wait("typo")
    code, out, err = _lab(capsys, "logs", "typo")
    assert code == 1, (out, err)
    assert "tinydep-0.2-py3-none-any.whl" in out, out  # pip's own words: the init container's log
    assert err == ("lab: job 'typo': its deps step (installing its requirements) failed with exit code 1 (Error) "
                   "before the command ran; its output is above\n")  # fmt: skip
    assert _lab(capsys, "logs", "typo", "-f")[0] == 1
    code, out, _ = _lab(capsys, "status")
    assert "its deps step (installing its requirements) failed with exit code 1 (Error) on typo-0-" in out


def test_follow_waits_through_start_up_and_ends_with_the_commands_status(local, capsys) -> None:
    lab, proj = local
    (proj / "train.py").write_text("import sys\nprint('diverged')\nsys.exit(3)\n")
    _submit(capsys, proj, "bug", "python", "train.py")
    code, out, err = _lab(capsys, "logs", "bug", "-f")
    assert (code, out) == (3, "diverged\n"), err
    assert err.endswith("lab: job bug: its command exited with code 3\n")
    lab.wait("bug")
    code, out, _ = _lab(capsys, "status")
    (line,) = out.splitlines()[1:]
    assert line.split()[1] == "Failed" and "exit code 3 (Error) on bug-0-" in line


def test_a_gone_pod_is_read_from_log_dir(local, capsys) -> None:
    lab, proj = local
    (proj / "train.py").write_text(
        "import os, sys\nos.makedirs('out', exist_ok=True)\nopen('out/ckpt.pt', 'w').write('w')\n"
        "print('diverged', flush=True)\nsys.exit(3)\n"
    )
    _submit(capsys, proj, "lost", "python", "train.py", options=("--keep", "out"))
    lab.wait("lost")
    kept = lab.claim("results") / "lost"
    assert (kept / "out" / "ckpt.pt").read_text() == "w"  # --keep out: next to the code, kept
    assert "diverged" in (kept / "logs" / "node-0.log").read_text()
    from kubernetes import client

    core = client.CoreV1Api(lab.api())
    for pod in lab.pods("lost"):  # the node given back, the pods with it
        core.delete_namespaced_pod(pod["metadata"]["name"], "u-alice", grace_period_seconds=0)
    lab.gone("lost")
    code, out, err = _lab(capsys, "logs", "lost")
    every = _lab(capsys, "logs", "lost", "--all")  # --all reads the gone pods the same way
    assert code == 0, err
    assert "diverged" in out and "--- lab: exit 3" in out
    assert "the pod of index 0 is gone; its output kept in /results/lost/logs/node-0.log" in err
    assert every[0] == 0, every[2]
    assert "[node 0] diverged\n" in every[1] and "the pod of index 0 is gone" in every[2]
    assert not lab.pods("lost")
