"""Commands as the researcher types them, made to run as each launcher documents (labctl/launchers.py), and the
environment conventions checked against the launchers' own code where it is installed (torchrun here)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from labctl import launchers


def test_plain_torchrun_is_left_alone() -> None:
    launch = launchers.adapt(["torchrun", "train.py", "--lr", "3e-4"], "job", 2, 8)
    assert launch.command == ["torchrun", "train.py", "--lr", "3e-4"] and launch.launcher == "torchrun"
    assert launchers.launcher_of(["python", "-m", "torch.distributed.run", "t.py"]) == "torchrun"


def test_torchrun_reads_every_option_lab_sets_from_pet_variables() -> None:
    """torch's own parser: each PET_* lab puts in the pod is an option torchrun reads when it is not given."""
    torch_run = pytest.importorskip(
        "torch.distributed.run", reason="torch is not installed (make tools adds it)"
    )
    parser = torch_run.get_args_parser()
    dests = {a.dest for a in parser._actions}
    for name in ("PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT",
                 "PET_RDZV_ENDPOINT", "PET_RDZV_ID", "PET_RDZV_BACKEND", "PET_TEE", "PET_LOG_DIR"):  # fmt: skip
        assert name[4:].lower() in dests, name
    import os

    env = {"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_NPROC_PER_NODE": "8", "PET_MASTER_ADDR": "job-0.job",
           "PET_MASTER_PORT": "29500"}  # fmt: skip
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:  # torchrun's env action reads PET_* when the parser is built
        args = torch_run.get_args_parser().parse_args(["train.py"])
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert (args.nnodes, args.node_rank, args.nproc_per_node, args.master_addr, args.master_port) == (
        "2", 1, "8", "job-0.job", 29500)  # fmt: skip


def test_c10d_gets_its_endpoint_and_id() -> None:
    env = {
        e["name"]: e["value"]
        for e in launchers.adapt(["torchrun", "--rdzv-backend=c10d", "t.py"], "j", 3, 1).env
    }
    assert env["PET_RDZV_ENDPOINT"] == "j-0.j:29500" and env["PET_RDZV_ID"] == "j"
    assert "PET_RDZV_ENDPOINT" not in {
        e["name"] for e in launchers.adapt(["torchrun", "t.py"], "j", 3, 1).env
    }


def test_max_restarts_on_several_nodes_gets_the_c10d_rendezvous() -> None:
    """Under torchrun's static default only the failed node restarts its workers; the others waited in their
    collective (issue 37). --max-restarts on several nodes gets c10d, its endpoint and id; anything else is kept."""
    launch = launchers.adapt(["torchrun", "--max-restarts", "3", "t.py"], "j", 2, 2)
    env = {e["name"]: e["value"] for e in launch.env}
    assert (env["PET_RDZV_BACKEND"], env["PET_RDZV_ENDPOINT"], env["PET_RDZV_ID"]) == (
        "c10d",
        "j-0.j:29500",
        "j",
    )
    assert any("c10d rendezvous" in n for n in launch.notes)
    for command, nodes in ((["torchrun", "--max-restarts=3", "t.py"], 1),  # one node: nothing to coordinate
                           (["torchrun", "--max-restarts", "0", "t.py"], 2),
                           (["torchrun", "--max_restarts=3", "--rdzv-backend=static", "t.py"], 2),  # theirs
                           (["torchrun", "t.py"], 2)):  # fmt: skip
        assert "PET_RDZV_BACKEND" not in {e["name"] for e in launchers.adapt(command, "j", nodes, 2).env}, (
            command
        )


def test_accelerate_gets_the_flags_it_has_no_environment_for() -> None:
    launch = launchers.adapt(["accelerate", "launch", "--mixed_precision", "bf16", "train.py"], "job", 2, 8)
    assert launch.command[:2] == ["accelerate", "launch"] and launch.command[-3:] == [
        "--mixed_precision",
        "bf16",
        "train.py",
    ]
    flags = dict(zip(launch.command[2:12:2], launch.command[3:12:2], strict=True))
    assert flags == {"--num_machines": "$(PET_NNODES)", "--machine_rank": "$(PET_NODE_RANK)",
                     "--main_process_ip": "$(PET_MASTER_ADDR)", "--main_process_port": "$(PET_MASTER_PORT)",
                     "--num_processes": "$(WORLD_SIZE)"}  # fmt: skip
    assert "--multi_gpu" in launch.command and launch.notes
    given = launchers.adapt(["accelerate", "launch", "--num_machines", "2", "t.py"], "job", 2, 8).command
    assert given.count("--num_machines") == 1
    assert launchers.adapt(["accelerate", "launch", "t.py"], "job", 1, 8).command == [
        "accelerate",
        "launch",
        "t.py",
    ]


def test_deepspeed_gets_its_hostfile_and_no_ssh() -> None:
    launch = launchers.adapt(["deepspeed", "train.py", "--deepspeed_config", "ds.json"], "job", 2, 8)
    assert launch.command[:1] == ["deepspeed"] and launch.command[-3:] == [
        "train.py",
        "--deepspeed_config",
        "ds.json",
    ]
    assert "--no_ssh" in launch.command and "/job/hostfile" in launch.command
    assert launch.hostfile == "job-0.job slots=8\njob-1.job slots=8\n"


def test_shell_references_expand_under_sh_and_nothing_else_does(tmp_path) -> None:
    cmd = [
        sys.executable,
        "-c",
        "import sys; print(sys.argv[1:])",
        "$NNODES",
        "${LOG_DIR}/x",
        "a b",
        "*",
        '"q"',
        "$(VAR)",
    ]
    wrapped = launchers.shell_wrapped(cmd)
    assert wrapped[:2] == ["/bin/sh", "-c"]
    # Kubernetes expands $(VAR) first (defined here); the shell then expands $NNODES and ${LOG_DIR}, nothing more
    script = wrapped[2].replace("$(VAR)", "v")
    out = subprocess.run(["/bin/sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={"NNODES": "2", "LOG_DIR": "/results/j", "PATH": "/usr/bin:/bin"},
                         executable=None).stdout  # fmt: skip
    assert out.strip() == str(["2", "/results/j/x", "a b", "*", '"q"', "v"])
    assert launchers.shell_wrapped(["torchrun", "train.py"]) is None
    assert shlex.split(wrapped[2])[0] == "exec"  # signals reach the process, not a shell
