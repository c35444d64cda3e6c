"""Public training repositories run through `lab` on the local cluster exactly as their READMEs say (issue 37):
minGPT's shape (tests/labctl/fixtures/mingpt_like: an installable package with setup.py, a project script that
imports it after `pip install -e .` and writes ./out next to the code), with nothing fetched from the network. The
pods are the process kubelet's processes on the real local cluster (tests/labctl/real_lab.py), on the standard
image's venv, as in test_sample_project.py, whose cluster fixture this reuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from localcluster.processes import free_port
from tests.labctl import test_sample_project as sample
from tests.labctl.test_sample_project import _git, _lab

cluster = sample.cluster  # the same real local cluster as alice

pytestmark = pytest.mark.e2e

MINGPT = Path(__file__).parent / "fixtures" / "mingpt_like"


def _require_the_images_pip() -> None:
    """The standard venv here has the image's pinned pip (scripts/install-tools.sh rebuilds it when the pins
    change): an older pip (before 25) still runs `setup.py develop`, which no image of ours has."""
    import os
    import subprocess

    from clusterspec import standard_image
    from localcluster.kubelet import images as kubelet

    want = standard_image.packages()["pip"]
    have = subprocess.run([f"{kubelet.standard_bin()}/python", "-c", "import pip; print(pip.__version__)"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    if have != want:
        reason = (
            f"the standard venv has pip {have or 'none'}, the image pins {want}: `make tools` rebuilds it"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "minGPT"
    shutil.copytree(MINGPT, proj, ignore=shutil.ignore_patterns("__pycache__", "out", "*.egg-info"))
    _git(proj, "init", "-q")
    _git(proj, "add", ".")
    _git(proj, "commit", "-q", "-m", "as published")
    return proj


def test_mingpt_installs_itself_and_runs_its_project_as_the_readme_says(
    cluster, capsys, tmp_path, monkeypatch
):
    lab, _ = cluster
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # lab's side fetches nothing either
    proj = _project(tmp_path)
    out = _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "V100", "--name", "adder", "--path", str(proj),
               "--env", "MAX_ITERS=20", "--", "python", "projects/adder/adder.py")  # fmt: skip
    assert "the project is a package: the job runs `pip install -e .` in its own venv" in out
    job = lab.wait("adder", timeout_s=180)
    log = _lab(capsys, "logs", "adder")
    assert job["status"].get("succeeded") == 1, (job["status"], log)
    assert "iter_dt iter 19: train loss" in log and "saved ./out/adder/model.pt" in log
    (folder,) = lab.pod_folders("adder")
    workspace = folder / "volumes" / "workspace"
    config = json.loads((workspace / "out" / "adder" / "config.json").read_text())
    assert config["mingpt"] == str(
        workspace / "mingpt" / "__init__.py"
    )  # the editable install: the code itself
    kept = lab.claim("results") / "adder" / "logs" / "node-0.log"
    assert "iter_dt iter 19: train loss" in kept.read_text()  # the output outlives the pod


def test_the_readmes_own_pip_install_in_the_command(cluster, capsys, tmp_path) -> None:
    """`pip install -e .` typed in the command, as the README says it: into the job's venv (no Permission denied on
    the image's), with the image's setuptools (nothing fetched)."""
    lab, _ = cluster
    _require_the_images_pip()
    proj = _project(tmp_path)
    _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "V100", "--name", "readme", "--path", str(proj), "--env",
         "MAX_ITERS=2", "--", "sh", "-c", "pip install --no-index -e . && python projects/adder/adder.py")  # fmt: skip
    job = lab.wait("readme", timeout_s=180)
    log = _lab(capsys, "logs", "readme")
    assert job["status"].get("succeeded") == 1, log
    assert "Successfully installed minGPT" in log and "saved ./out/adder/model.pt" in log


HYDRA = Path(__file__).parent / "fixtures" / "hydra_ddp"
WHEELHOUSE = Path(__file__).resolve().parents[2] / ".cache" / "hydra-wheels"


def _wheelhouse(datasets: Path) -> None:
    """hydra-core and its dependencies as wheels on the datasets volume, as an admin stages a wheelhouse for an
    offline cluster: built once into .cache (the only fetch, from PyPI), read by the job with pip's own settings."""
    import subprocess
    import sys

    if not any(WHEELHOUSE.glob("hydra_core-*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w",
                        str(WHEELHOUSE), "hydra-core==1.3.2"], check=True)  # fmt: skip
    shutil.copytree(WHEELHOUSE, datasets / "wheels", dirs_exist_ok=True)
    for p in [datasets, *datasets.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


def test_a_hydra_torchrun_project_on_two_nodes_keeps_its_out(cluster, capsys, tmp_path) -> None:
    """pytorch/examples' minGPT-ddp shape: requirements.txt with hydra-core (not in the image: installed at start from
    the wheelhouse, nothing fetched), plain `torchrun main.py` as a 2-node x 2-process gang on the CPU with gloo,
    Hydra's config next to the code, snapshots in ./out kept in $LOG_DIR with --keep out."""
    lab, _ = cluster
    _wheelhouse(lab.claim("datasets"))
    proj = tmp_path / "minGPT-ddp"
    shutil.copytree(HYDRA, proj, ignore=shutil.ignore_patterns("__pycache__", "out"))
    port = str(free_port())
    out = _lab(capsys, "submit", "--gpus", "2", "--nodes", "2", "--gpu-type", "V100", "--name", "ddp", "--path",
               str(proj), "--keep", "out", "--env", "PIP_NO_INDEX=1", "--env", "PIP_FIND_LINKS=/datasets/wheels",
               "--env", "OMP_NUM_THREADS=1", "--env", f"PET_MASTER_PORT={port}", "--env", f"MASTER_PORT={port}",
               "--", "torchrun", "main.py")  # fmt: skip
    assert "requirements.txt: 1 not in the standard image (hydra-core)" in out
    job = lab.wait("ddp", timeout_s=240)
    log = _lab(capsys, "logs", "ddp", "--all")
    assert job["status"].get("succeeded") == 2, log[-3000:]
    reports = sample._reports(log)
    assert sorted(r["rank"] for r in reports) == [0, 1, 2, 3] and {r["world_size"] for r in reports} == {4}
    assert "[GPU0] Epoch 3" in log and "Training snapshot saved at out/snapshot.pt" in log
    kept = lab.claim("results") / "ddp"
    assert (kept / "out" / "snapshot.pt").exists()  # ./out outlives the pods
    assert (kept / "out" / "hydra" / ".hydra" / "config.yaml").exists()  # Hydra's own record, kept with it
    assert {f.name for f in (kept / "logs").iterdir()} == {"node-0.log", "node-1.log"}  # every rank's output
