"""The elastic restart (`torchrun --max-restarts`) on the local cluster (issue 37): a 2-node x 2-process gang on the
CPU with gloo, one worker killed (SIGKILL, as the OOM killer does): every node restarts its workers under the c10d
rendezvous lab sets, the job completes, and it does so in bounded time. Under torchrun's static default the other
node's workers waited in their all_reduce for gloo's timeout (30 min) while the job showed Running. The pods are
the process kubelet's processes on the real local cluster, as in test_sample_project.py, whose cluster fixture this
reuses; each step sleeps, so the
four workers cost little CPU."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from localcluster.processes import free_port
from tests.labctl import test_sample_project as sample
from tests.labctl.test_sample_project import _lab

cluster = sample.cluster

pytestmark = pytest.mark.e2e

TRAIN = """import os, pathlib, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
logs = pathlib.Path(os.environ["LOG_DIR"])
first = logs / f"first-pid-{rank}"
if not first.exists():
    first.write_text(str(os.getpid()))
ckpt = logs / "step"
start = torch.tensor([int(ckpt.read_text()) if ckpt.exists() else 0])
dist.broadcast(start, 0)  # resume where rank 0's last checkpoint says, as nanoGPT's init_from='resume' does
t = torch.ones(1)
for step in range(int(start), 80):
    dist.all_reduce(t)
    if rank == 0:
        ckpt.write_text(str(step + 1))
    time.sleep(0.25)
print(f"rank {rank} of {world}: resumed at step {int(start)}, done", flush=True)
dist.destroy_process_group()
"""


def _file(path: Path, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.25)
    raise AssertionError(f"{path} never appeared")


def test_a_killed_worker_restarts_every_nodes_workers_and_the_job_completes(
    cluster, capsys, tmp_path
) -> None:
    lab, _ = cluster
    proj = tmp_path / "elastic"
    proj.mkdir()
    (proj / "train.py").write_text(TRAIN)
    port = str(free_port())  # the pods are processes of one host: the job's own rendezvous port
    out = _lab(capsys, "submit", "--gpus", "2", "--nodes", "2", "--gpu-type", "V100", "--name", "elastic", "--path",
               str(proj), "--env", "OMP_NUM_THREADS=1", "--env", f"PET_RDZV_ENDPOINT=elastic-0.elastic:{port}",
               "--", "torchrun", "--max-restarts", "3", "train.py")  # fmt: skip
    assert "lab sets the c10d rendezvous" in out
    logs = lab.claim("results") / "elastic"
    pids = {rank: int(_file(logs / f"first-pid-{rank}", 180)) for rank in range(4)}
    os.kill(pids[3], signal.SIGKILL)
    killed = time.monotonic()
    try:
        job = lab.wait("elastic", timeout_s=240)
    except AssertionError:
        raise AssertionError(lab.tails("elastic", lines=60)) from None
    recovered_s = time.monotonic() - killed
    text = _lab(capsys, "logs", "elastic", "--all")
    assert job["status"].get("succeeded") == 2, (job["status"], text[-3000:])
    resumed = re.findall(r"rank (\d) of 4: resumed at step (\d+), done", text)
    assert sorted(int(r) for r, _ in resumed) == [0, 1, 2, 3], text[-3000:]
    assert (
        len({s for _, s in resumed}) == 1 and int(resumed[0][1]) > 0
    )  # every node restarted, from the checkpoint
    print(f"a killed worker: every node's workers restarted and the job completed {recovered_s:.1f} s later")
