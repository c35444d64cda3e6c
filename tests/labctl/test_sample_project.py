"""A researcher's real code runs as its own README says (issue 25, "Done when"): the sample project with nanoGPT's
habits (tests/labctl/fixtures/nanogpt_like: writes next to its code, launched by torchrun, a tracked
data/*/prepare.py, a requirements file) submitted with `lab` and plain `torchrun train.py`, single-node and as a
2-node gang, its pods run as local processes by the emulator's kubelet (autoscaler/emulator/kubelet.py) with the
Job's environment, uid and working directory: the init container unpacks the snapshot from the bucket, torchrun
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
import yaml

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from autoscaler.model.adapters import ModelCloud
from clusterspec.loader import load_spec
from labctl.cli import main
from localcluster.processes import free_port
from provision import scheduler
from tests.labctl.conftest import SPEC_DATA, make_bucket, make_wheel, publish_settings
from tests.support import load_yaml, require_standard_venv

# found, not imported: the jobs import torch, in their own processes
if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed (make tools installs the CPU build)", allow_module_level=True)

from autoscaler.model.spec_groups import groups_from_spec  # noqa: E402

pytestmark = pytest.mark.e2e  # torchrun and its workers train for real: `make e2e`

FIXTURE = Path(__file__).parent / "fixtures" / "nanogpt_like"
V100 = "dlr-us-west-2-gpu-v100x8"


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "r", "GIT_AUTHOR_EMAIL": "r@x", "GIT_COMMITTER_NAME": "r",
           "GIT_COMMITTER_EMAIL": "r@x"}  # fmt: skip
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def cluster(s3_url, tmp_path, monkeypatch, kubelet_root):
    """The emulator running pods as processes, the gang scheduler deployed as `invoke up` deploys it, two 8-GPU nodes
    up, the settings published, alice's namespace and kubeconfig."""
    require_standard_venv()  # the pods run as alice's uid, with the standard image's interpreter
    make_bucket(s3_url)
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), groups_from_spec(SPEC_DATA))
    with Emulator(model, run_pods=kubelet_root) as emu:
        emu.install_podgroup_crd()
        publish_settings(emu, s3_url, tmp_path / "admin.kubeconfig")
        files = scheduler.write(load_spec(), tmp_path / "scheduler")
        for doc in yaml.safe_load_all(files["gang-scheduler.yaml"].read_text()):
            if doc:
                emu.apply(doc)
        emu.create_namespace("u-alice")
        with model.lock:
            ModelCloud(model).set_desired(V100, 2)
            model.advance(model.now() + 1200)  # boot, join, device plugin; the gang scheduler's pods run
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        data = load_yaml(kubeconfig)
        for ctx in data["contexts"]:
            ctx["context"]["namespace"] = "u-alice"
        kubeconfig.write_text(yaml.safe_dump(data))
        for k in (
            "LAB_SETTINGS",
            "LAB_REGISTRY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_PROFILE",
        ):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setenv("LAB_ENGINE", "")
        monkeypatch.setenv("LAB_USER", "alice")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        proj = tmp_path / "nanogpt_like"
        shutil.copytree(FIXTURE, proj, ignore=shutil.ignore_patterns("__pycache__", "out", "runs", "*.bin"))
        _git(proj, "init", "-q")
        _git(proj, "add", ".")
        _git(proj, "commit", "-q", "-m", "as published")
        yield emu, proj, kubelet_root


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


def _wait(emu, job: str, timeout_s: float = 240.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with emu.model.lock:
            emu.model.advance(emu.model.now() + 1)
            obj = emu.model.store.find("jobs", "u-alice", job)
            conds = {
                c["type"]: c["status"] for c in ((obj or {}).get("status") or {}).get("conditions") or ()
            }
        if conds.get("Complete") == "True" or conds.get("Failed") == "True":
            return obj
        time.sleep(0.25)
    raise AssertionError(f"job {job} did not finish in {timeout_s} s")


def _pod_folders(kubelet: Path, job: str) -> list[Path]:
    return sorted(p for p in kubelet.iterdir() if p.name.startswith(f"u-alice_{job}-"))


def _tails(kubelet: Path, job: str, lines: int = 30) -> str:
    """The last lines of each container log of the job's pods: what a failed assertion shows."""
    out = []
    for folder in _pod_folders(kubelet, job):
        for log in sorted((folder / "containers").glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {folder.name}/{log.name}\n" + "\n".join(text))
    return "\n".join(out)


def _reports(text: str) -> list[dict]:
    return [json.loads(line.split("report ", 1)[1]) for line in text.splitlines() if "report {" in line]


def _assert_ran_as_alice(reports: list[dict], *folders: Path) -> None:
    """Every process ran as the Job's uid (alice, 2001): really, where the emulator runs as root; an unprivileged
    kubelet cannot change uid, and records the Job's in each pod's folder instead (kubelet.py)."""
    notes = [(f / "user").read_text() if (f / "user").exists() else "" for f in folders]
    if os.geteuid() == 0:
        assert {r["uid"] for r in reports} == {2001}, notes
    else:
        assert all("2001:2001" in n for n in notes), notes


def test_single_node_then_resume_from_log_dir(cluster, capsys) -> None:
    emu, proj, kubelet = cluster
    out = _submit(capsys, proj, "char", "--gpus", "2", "--env", "MAX_ITERS=10")
    assert "code: 5 files" in out and "the standard image has all 2 requirements" in out
    job = _wait(emu, "char")
    assert job["status"].get("succeeded") == 1, (job["status"], _tails(kubelet, "char"))
    log = _lab(capsys, "logs", "char")
    reports = _reports(log)
    assert sorted(r["rank"] for r in reports) == [0, 1] and {r["world_size"] for r in reports} == {2}
    (folder,) = _pod_folders(kubelet, "char")
    workspace = folder / "volumes" / "workspace"
    assert {r["cwd"] for r in reports} == {str(workspace)}  # the Job's workingDir, /workspace
    env = reports[0]["launcher_env"]
    assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"], env["PET_NODE_RANK"]) == ("1", "2", "0")
    results = kubelet / "claims" / "u-alice_results"
    assert env["LOG_DIR"] == str(results / "char")
    _assert_ran_as_alice(reports, folder)
    # what nanoGPT's habits write next to the code, in the job's own writable working directory
    assert (workspace / "data" / "shakespeare_char" / "train.bin").exists()  # prepare.py, tracked, travelled
    assert (workspace / "out" / "ckpt.pt").exists() and (workspace / "runs" / "events.jsonl").exists()
    assert (results / "char" / "ckpt.pt").exists()  # $LOG_DIR persists
    assert "[rank0]:iter 9: loss" in log  # torchrun's rank prefixes

    _lab(capsys, "cancel", "char")  # a replaced pod, or a rerun: the same name, the same $LOG_DIR
    for _ in range(20):
        with emu.model.lock:
            emu.model.advance(emu.model.now() + 1)
            gone = emu.model.store.find("jobs", "u-alice", "char") is None
        if gone:
            break
        time.sleep(0.2)
    _submit(capsys, proj, "char", "--gpus", "1", "--env", "MAX_ITERS=10")  # one worker is enough to resume
    job = _wait(emu, "char")
    log = _lab(capsys, "logs", "char")
    assert "resuming from" in log and "at iter 10" in log
    assert {r["iters"] for r in _reports(log)} == {0}


def test_two_node_gang_with_plain_torchrun(cluster, capsys) -> None:
    emu, proj, kubelet = cluster
    out = _submit(capsys, proj, "gang", "--gpus", "2", "--nodes", "2", "--env", "MAX_ITERS=5")
    assert "submitted job gang in u-alice: 2 nodes x 2 GPUs, gang" in out
    job = _wait(emu, "gang")
    assert job["status"].get("succeeded") == 2, (job["status"], _tails(kubelet, "gang"))
    with emu.model.lock:
        pods = [
            p for p in emu.model.store.list("pods", "u-alice") if p["metadata"]["name"].startswith("gang-")
        ]
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
    _assert_ran_as_alice(reports, *_pod_folders(kubelet, "gang"))


def test_a_requirement_the_standard_image_lacks_is_installed_at_start_without_docker(cluster, capsys) -> None:
    emu, proj, kubelet = cluster
    (proj / "wheels").mkdir()
    make_wheel(proj / "wheels" / "tinydep-0.1-py3-none-any.whl")
    (proj / "requirements.txt").write_text("torch\nnumpy\n./wheels/tinydep-0.1-py3-none-any.whl\n")
    (proj / "use_dep.py").write_text("import numpy, tinydep\nprint('tinydep', tinydep.VALUE)\n")
    out = _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "V100", "--name", "dep", "--path", str(proj),
               "--", "python", "use_dep.py")  # fmt: skip
    assert "requirements.txt: the standard image has all but the project's own " \
        "(./wheels/tinydep-0.1-py3-none-any.whl); installed when the job starts" in out  # fmt: skip
    job = _wait(emu, "dep", timeout_s=120)
    assert job["status"].get("succeeded") == 1, (job["status"], _tails(kubelet, "dep"))
    assert "tinydep 42" in _lab(capsys, "logs", "dep")
