"""A researcher's real code runs as its own README says (issue 25, "Done when"): the sample project with nanoGPT's
habits (tests/labctl/fixtures/nanogpt_like: writes next to its code, launched by torchrun, a tracked
data/*/prepare.py, a requirements file) submitted with `lab` and plain `torchrun train.py`, single-node and as a
2-node gang, on the real local cluster (tests/labctl/real_lab.py: the real control plane and gang scheduler, the
autoscaler buying the nodes), its pods run as local processes by the process kubelet with the Job's environment,
uid and working directory: the init container unpacks the snapshot from the bucket, torchrun
learns nodes, rank and rendezvous from PET_*, torch trains on the CPU with gloo at the right world size, writes
out/ and runs/ next to its code and its checkpoint to $LOG_DIR, and a second run resumes from it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from labctl.cli import main
from localcluster.processes import free_port
from tests.labctl.conftest import make_wheel

# found, not imported: the jobs import torch, in their own processes
if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed (make tools installs the CPU build)", allow_module_level=True)


pytestmark = pytest.mark.e2e  # torchrun and its workers train for real: `make e2e`

FIXTURE = Path(__file__).parent / "fixtures" / "nanogpt_like"
V100 = "dlr-us-west-2-gpu-v100x8"


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "r", "GIT_AUTHOR_EMAIL": "r@x", "GIT_COMMITTER_NAME": "r",
           "GIT_COMMITTER_EMAIL": "r@x"}  # fmt: skip
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def cluster(lab_on_real, tmp_path):
    """The real local cluster as alice, and the sample project as published (a git repository)."""
    proj = tmp_path / "nanogpt_like"
    shutil.copytree(FIXTURE, proj, ignore=shutil.ignore_patterns("__pycache__", "out", "runs", "*.bin"))
    _git(proj, "init", "-q")
    _git(proj, "add", ".")
    _git(proj, "commit", "-q", "-m", "as published")
    return lab_on_real, proj


def _lab(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    return out


def _submit(capsys, proj: Path, name: str, *options: str) -> str:
    port = str(free_port())  # pods are processes of one host here: each job its own rendezvous port
    return _lab(capsys, "submit", *options, "--gpu-type", "V100", "--name", name, "--path", str(proj),
                "--env", "OMP_NUM_THREADS=1", "--env", f"PET_MASTER_PORT={port}", "--env", f"MASTER_PORT={port}",
                "--", "torchrun", "train.py")  # fmt: skip


def _reports(text: str) -> list[dict]:
    return [json.loads(line.split("report ", 1)[1]) for line in text.splitlines() if "report {" in line]


def _assert_ran_as_alice(lab, job: str, reports: list[dict]) -> None:
    """Every process ran as the Job's uid (alice, 2001): really, where the process kubelet runs as root; an
    unprivileged one cannot change uid, and says so in each container's status message (process.py)."""
    if os.geteuid() == 0:
        assert {r["uid"] for r in reports} == {2001}, reports
    else:
        pods = lab.pods(job)
        assert {p["spec"]["securityContext"]["runAsUser"] for p in pods} == {2001}


def test_single_node_then_resume_from_log_dir(cluster, capsys) -> None:
    lab, proj = cluster
    out = _submit(capsys, proj, "char", "--gpus", "2", "--env", "MAX_ITERS=10")
    assert "code: 5 files" in out and "the standard image has all 2 requirements" in out
    job = lab.wait("char")
    if job["status"].get("succeeded") != 1:  # pytest.fail: all of the logs, not a cut repr
        pytest.fail(f"{job['status']}\n{lab.tails('char', 80)}")
    log = _lab(capsys, "logs", "char")
    reports = _reports(log)
    assert sorted(r["rank"] for r in reports) == [0, 1] and {r["world_size"] for r in reports} == {2}
    (folder,) = lab.pod_folders("char")
    workspace = folder / "volumes" / "workspace"
    assert {r["cwd"] for r in reports} == {str(workspace)}  # the Job's workingDir, /workspace
    env = reports[0]["launcher_env"]
    assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"], env["PET_NODE_RANK"]) == ("1", "2", "0")
    results = lab.claim("results")
    assert env["LOG_DIR"] == str(results / "char")
    _assert_ran_as_alice(lab, "char", reports)
    # what nanoGPT's habits write next to the code, in the job's own writable working directory
    assert (workspace / "data" / "shakespeare_char" / "train.bin").exists()  # prepare.py, tracked, travelled
    assert (workspace / "out" / "ckpt.pt").exists() and (workspace / "runs" / "events.jsonl").exists()
    assert (results / "char" / "ckpt.pt").exists()  # $LOG_DIR persists
    assert "[rank0]:iter 9: loss" in log  # torchrun's rank prefixes

    _lab(capsys, "cancel", "char")  # a replaced pod, or a rerun: the same name, the same $LOG_DIR
    deadline = time.monotonic() + 60
    while lab.job("char") is not None and time.monotonic() < deadline:
        time.sleep(0.5)
    _submit(capsys, proj, "char", "--gpus", "1", "--env", "MAX_ITERS=10")  # one worker is enough to resume
    job = lab.wait("char")
    log = _lab(capsys, "logs", "char")
    assert "resuming from" in log and "at iter 10" in log
    assert {r["iters"] for r in _reports(log)} == {0}


def test_two_node_gang_with_plain_torchrun(cluster, capsys) -> None:
    lab, proj = cluster
    out = _submit(capsys, proj, "gang", "--gpus", "2", "--nodes", "2", "--env", "MAX_ITERS=5")
    assert "submitted job gang in u-alice: 2 nodes x 2 GPUs, gang" in out
    job = lab.wait("gang")
    if job["status"].get("succeeded") != 2:  # pytest.fail: all of the logs, not a cut repr
        pytest.fail(f"{job['status']}\n{lab.tails('gang', 80)}")
    pods = lab.pods("gang")
    assert {p["spec"]["schedulerName"] for p in pods} == {"research-gang-scheduler"}
    assert len({p["spec"]["nodeName"] for p in pods}) == 2  # one pod per node
    everything = _lab(capsys, "logs", "gang", "--all")
    reports = _reports(everything)
    assert sorted(r["rank"] for r in reports) == [0, 1, 2, 3] and {r["world_size"] for r in reports} == {4}
    assert {r["launcher_env"]["PET_NODE_RANK"] for r in reports} == {"0", "1"}
    assert {r["node_rank"] for r in reports} == {
        "0",
        "1",
    }  # torchrun's GROUP_RANK: the node rank it was given
    assert "[node 0] " in everything and "[node 1] " in everything
    assert "[rank0]:" in _lab(capsys, "logs", "gang")  # rank 0 is rank 0
    _assert_ran_as_alice(lab, "gang", reports)


def test_a_requirement_the_standard_image_lacks_is_installed_at_start_without_docker(cluster, capsys) -> None:
    lab, proj = cluster
    (proj / "wheels").mkdir()
    make_wheel(proj / "wheels" / "tinydep-0.1-py3-none-any.whl")
    (proj / "requirements.txt").write_text("torch\nnumpy\n./wheels/tinydep-0.1-py3-none-any.whl\n")
    (proj / "use_dep.py").write_text("import numpy, tinydep\nprint('tinydep', tinydep.VALUE)\n")
    out = _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "V100", "--name", "dep", "--path", str(proj),
               "--", "python", "use_dep.py")  # fmt: skip
    assert "requirements.txt: the standard image has all but the project's own " \
        "(./wheels/tinydep-0.1-py3-none-any.whl); installed when the job starts" in out  # fmt: skip
    job = lab.wait("dep", timeout_s=120)
    if job["status"].get("succeeded") != 1:  # pytest.fail: all of the logs, not a cut repr
        pytest.fail(f"{job['status']}\n{lab.tails('dep', 80)}")
    assert "tinydep 42" in _lab(capsys, "logs", "dep")
