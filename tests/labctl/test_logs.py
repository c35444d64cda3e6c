"""`lab logs JOB` against the emulator's pods/{name}/log (autoscaler/emulator/logs.py): the output of the job's
pod, its last lines followed until the pod goes, and one line, not a traceback, while there is none to read.

Still on the emulator (issue 33): pods/log on the shared real control plane needs a kubelet endpoint for kwok's nodes
(kwok's server with its Logs CRD enabled, and a stage for a container still creating); the same reads run for real
on the process kubelet in the end-to-end tests (test_job_output.py, test_sample_project.py)."""

from __future__ import annotations

import threading
import time

import pytest

from autoscaler.model.adapters import ModelCloud
from autoscaler.model.objects import creating_status
from labctl.cli import main

GROUP = "dlr-us-west-2-gpu-v100x8"  # the spec's first 8-GPU group (tests/labctl/test_scale_up.py)


def _lab(emu_lab_env, *argv: str) -> int:
    with pytest.raises(SystemExit) as e:
        main(["--kubeconfig", emu_lab_env, *argv])
    return e.value.code


def _submit(emu_lab_env, project, name: str) -> None:
    assert _lab(emu_lab_env, "submit", "--no-build", "--gpus", "8", "--name", name, "--path", str(project),
                "--", "python", "train.py") == 0  # fmt: skip


def _pod_of(emu, job: str) -> dict:
    with emu.model.lock:
        (pod,) = [p for p in emu.model.store.list("pods", "u-alice") if p["metadata"]["name"].startswith(job)]
        return pod


def _boot_a_node(emu) -> None:
    with emu.model.lock:
        ModelCloud(emu.model).set_desired(GROUP, 1)
        emu.model.advance(emu.model.now() + 1200)  # the instance boots, joins, the pod starts


def test_logs_before_the_pod_has_a_node_and_after_it_prints(emu, emu_lab_env, project, capsys):
    _submit(emu_lab_env, project, "resnet")
    capsys.readouterr()
    assert _lab(emu_lab_env, "logs", "resnet") == 2
    err = capsys.readouterr().err
    assert err == "lab: job 'resnet' has no output yet: not on a node yet; `lab status` shows where it is\n"
    assert err.count("\n") == 1
    _boot_a_node(emu)
    pod = _pod_of(emu, "resnet")
    assert pod["status"]["phase"] == "Running"
    emu.api.logs.write(
        emu.api, "u-alice", pod["metadata"]["name"], "main", "epoch 1 loss 0.9\nepoch 2 loss 0.4"
    )
    assert _lab(emu_lab_env, "logs", "resnet") == 0
    assert capsys.readouterr().out == "epoch 1 loss 0.9\nepoch 2 loss 0.4\n"


def test_logs_follow_streams_until_the_job_is_cancelled(emu, emu_lab_env, project, capsys):
    _submit(emu_lab_env, project, "sweep")
    _boot_a_node(emu)
    name = _pod_of(emu, "sweep")["metadata"]["name"]
    emu.api.logs.write(emu.api, "u-alice", name, "main", "step 1")
    capsys.readouterr()
    codes: list[int] = []
    follower = threading.Thread(target=lambda: codes.append(_lab(emu_lab_env, "logs", "sweep", "-f")))
    follower.start()
    time.sleep(0.3)
    emu.api.logs.write(emu.api, "u-alice", name, "main", "step 2")
    time.sleep(0.3)
    assert follower.is_alive()  # still following the running container
    with emu.model.lock:
        emu.model.delete("pods", "u-alice", name)
    follower.join(timeout=10)
    assert not follower.is_alive() and codes == [1]  # -f ends with the job's status: this one never finished
    out, err = capsys.readouterr()
    assert out == "step 1\nstep 2\n"
    assert (
        err == "lab: job sweep: its pod is gone before the command ended (cancelled, or its node was lost)\n"
    )


def test_logs_of_a_container_still_starting_is_one_line(emu, emu_lab_env, project, capsys):
    _submit(emu_lab_env, project, "slow")
    _boot_a_node(emu)
    with emu.model.lock:  # the model's status of a pod whose node's network is not ready yet
        pod = emu.model.store.find("pods", "u-alice", _pod_of(emu, "slow")["metadata"]["name"])
        node = emu.model.store.find("nodes", None, pod["spec"]["nodeName"])
        pod["status"] = creating_status(pod, node, "2026-01-01T00:20:00Z")
    capsys.readouterr()
    assert _lab(emu_lab_env, "logs", "slow") == 2
    err = capsys.readouterr().err
    name = pod["metadata"]["name"]
    assert err == (
        "lab: job 'slow' has no output yet: its command is waiting (ContainerCreating); `lab status` shows where it is\n"
    )
    assert name.startswith("slow-0-")


def _two_nodes(emu, emu_lab_env, project, name: str, *command: str) -> list[dict]:
    # --no-gang: no gang scheduler runs in this emulator, and pods naming it stay Pending (test_cli.py)
    assert _lab(emu_lab_env, "submit", "--gpus", "8", "--nodes", "2", "--no-gang", "--name", name, "--path",
                str(project), "--", *command) == 0  # fmt: skip
    with emu.model.lock:
        ModelCloud(emu.model).set_desired(GROUP, 2)
        emu.model.advance(emu.model.now() + 1200)
        pods = sorted((p for p in emu.model.store.list("pods", "u-alice")
                       if p["metadata"]["name"].startswith(name)),
                      key=lambda p: p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"])  # fmt: skip
    assert [p["status"]["phase"] for p in pods] == ["Running", "Running"]
    return pods


def test_rank_0_is_the_pod_that_holds_rank_0_under_c10d(emu, emu_lab_env, project, capsys):
    """Under c10d the rendezvous assigns node ranks: node index 1 may hold ranks 0-7. torchrun's [rankN]: prefixes
    (lab sets PET_TEE and the prefix template) say which pod that is."""
    pods = _two_nodes(emu, emu_lab_env, project, "elastic", "torchrun", "--rdzv-backend=c10d", "train.py")
    emu.api.logs.write(emu.api, "u-alice", pods[0]["metadata"]["name"], "main", "[rank8]:step 1 loss 2.0")
    emu.api.logs.write(emu.api, "u-alice", pods[1]["metadata"]["name"], "main", "[rank0]:step 1 loss 1.9")
    capsys.readouterr()
    assert _lab(emu_lab_env, "logs", "elastic") == 0
    assert capsys.readouterr().out == "[rank0]:step 1 loss 1.9\n"
    assert _lab(emu_lab_env, "logs", "elastic", "--index", "0") == 0
    assert capsys.readouterr().out == "[rank8]:step 1 loss 2.0\n"


def test_all_prefixes_every_line_with_its_node_in_time_order(emu, emu_lab_env, project, capsys):
    pods = _two_nodes(emu, emu_lab_env, project, "both", "torchrun", "train.py")
    a, b = (p["metadata"]["name"] for p in pods)
    emu.api.logs.write(emu.api, "u-alice", a, "main", "[rank0]:first")
    with emu.model.lock:
        emu.model.advance(emu.model.now() + 1)
    emu.api.logs.write(emu.api, "u-alice", b, "main", "[rank8]:second")
    with emu.model.lock:
        emu.model.advance(emu.model.now() + 1)
    emu.api.logs.write(emu.api, "u-alice", a, "main", "[rank0]:third")
    capsys.readouterr()
    assert _lab(emu_lab_env, "logs", "both", "--all") == 0
    assert (
        capsys.readouterr().out == "[node 0] [rank0]:first\n[node 1] [rank8]:second\n[node 0] [rank0]:third\n"
    )
