"""The command as the researcher typed it, made to run the way its launcher documents (docs/researchers.md,
"Launchers").

- **torchrun** (``torchrun``, ``python -m torch.distributed.run``): nothing to change. torchrun reads each of its
  options from ``PET_<OPTION>`` when it is not given (torch/distributed/argparse_util.py, ``env``), and the pod
  carries ``PET_NNODES``, ``PET_NODE_RANK``, ``PET_NPROC_PER_NODE``, ``PET_MASTER_ADDR`` and ``PET_MASTER_PORT`` as
  Kubeflow's PyTorchJob sets them (training-operator pkg/controller.v1/pytorch/envvar.go ``setPodEnv``), so plain
  ``torchrun train.py`` runs on every node with the right node count, rank and rendezvous. With
  ``--rdzv-backend c10d`` (elastic) the pod also has ``PET_RDZV_ENDPOINT`` and ``PET_RDZV_ID`` (elastic.go). Each
  worker's lines carry ``[rank<N>]:`` (``PET_TEE`` and ``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE``, torch/distributed/
  run.py) and a copy goes to ``$LOG_DIR/torchrun``: that is how ``lab logs`` knows which pod holds rank 0. With
  ``--max-restarts N`` on several nodes and no ``--rdzv-backend``, the pod gets ``PET_RDZV_BACKEND=c10d``: under the
  static default only the failed node restarts its workers while the others wait in a collective for its timeout.
- **accelerate launch** has no environment convention for machines (accelerate/commands/launch.py reads flags or a
  config file): ``lab`` adds the flags a multi-node run needs and the command lacks, with Kubernetes' own ``$(VAR)``
  expansion (``--num_machines $(PET_NNODES) --machine_rank $(PET_NODE_RANK) ...``).
- **deepspeed**'s convention is its hostfile at ``/job/hostfile`` (deepspeed/launcher/runner.py ``DLTS_HOSTFILE``)
  and ``--no_ssh`` to launch each node on its own: a multi-node job gets the hostfile (a ConfigMap mounted at
  ``/job``) and ``--no_ssh --node_rank $(PET_NODE_RANK) --master_addr ... --master_port ...`` where missing.
- **TensorFlow**'s MultiWorkerMirroredStrategy reads ``TF_CONFIG``: a multi-node job has it (every worker's
  address, this pod's index), on port 2222 as Kubeflow's TFJob uses.
- ``$VAR`` / ``${VAR}``: Kubernetes expands only ``$(VAR)`` in a command (kubelet ``ExpandContainerCommandAndArgs``),
  so a command with shell references runs under ``/bin/sh -c 'exec ...'``, each argument double-quoted so that the
  references expand and nothing else is split or globbed; ``$(VAR)`` is expanded by Kubernetes itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

MASTER_PORT = 29500
TF_PORT = 2222  # TFJob's default port (training-operator pkg/apis/kubeflow.org/v1 TFJobDefaultPort)
HOSTFILE_DIR = "/job"  # deepspeed's DLTS_HOSTFILE is /job/hostfile
_SHELL_REF = re.compile(r"\$(\{[A-Za-z_]|[A-Za-z_])")


@dataclass
class Launch:
    command: list[str]
    env: list[dict] = field(default_factory=list)  # added to the pod's environment, in order
    notes: list[str] = field(default_factory=list)  # one line each, printed by `lab submit`
    hostfile: str | None = None  # deepspeed's hostfile text (a ConfigMap mounted at /job)
    launcher: str = "plain"


def launcher_of(command: list[str]) -> str:
    if not command:
        return "plain"
    exe = PurePosixPath(command[0]).name
    if exe == "torchrun" or (exe.startswith("python") and command[1:3] == ["-m", "torch.distributed.run"]):
        return "torchrun"
    if exe == "accelerate" and command[1:2] == ["launch"] or exe == "accelerate-launch":
        return "accelerate"
    if exe in ("deepspeed", "ds"):
        return "deepspeed"
    return "plain"


def _has(args: list[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in args for f in flags)


def _option(args: list[str], *flags: str) -> str | None:
    for i, a in enumerate(args):
        for f in flags:
            if a == f and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(f + "="):
                return a.split("=", 1)[1]
    return None


def _quote(arg: str) -> str:
    """Double-quoted for sh: ``$`` references still expand; quotes, backslashes and backticks are literal."""
    return '"' + re.sub(r'(["\\`])', r"\\\1", arg) + '"'


def shell_wrapped(command: list[str]) -> list[str] | None:
    """``/bin/sh -c 'exec "a" "$VAR"'`` for a command with shell references, else None."""
    if not any(_SHELL_REF.search(a) for a in command):
        return None
    return ["/bin/sh", "-c", "exec " + " ".join(_quote(a) for a in command)]


def tf_config(job: str, nodes: int) -> str:
    """TF_CONFIG with this pod's index filled in by Kubernetes (``$(NODE_RANK)``, defined before it)."""
    cluster = {"worker": [f"{job}-{i}.{job}:{TF_PORT}" for i in range(nodes)]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}}).replace(
        '"index": 0', '"index": $(NODE_RANK)'
    )


def adapt(command: list[str], job: str, nodes: int, gpus: int) -> Launch:
    kind = launcher_of(command)
    out = Launch(list(command), launcher=kind)
    args = command[1:]
    if kind == "torchrun":
        backend = _option(args, "--rdzv-backend", "--rdzv_backend")
        restarts = _option(args, "--max-restarts", "--max_restarts")
        if backend is None and nodes > 1 and restarts not in (None, "0") and not _has(args, "--standalone"):
            # torchrun's default static rendezvous restarts only the failed node's workers: the other nodes' workers
            # wait in their collective for its timeout (30 min with gloo), the job Running all along (issue 37).
            # Under c10d every agent sees the failed node rejoin and restarts its own workers with it.
            backend = "c10d"
            out.env.append({"name": "PET_RDZV_BACKEND", "value": "c10d"})
            out.notes.append(
                f"torchrun --max-restarts {restarts} on {nodes} nodes: lab sets the c10d rendezvous (PET_RDZV_BACKEND) "
                "so that every node restarts its workers when one fails (docs/researchers.md, Failures)"
            )
        if backend == "c10d" and nodes > 1 and restarts not in (None, "0"):
            # the agents share one TCPStore with the workers across rendezvous rounds (torch >= 2.4): the restarted
            # workers read their peers' addresses of the round before and fail to connect (Connection refused); a
            # store of the round's own, hosted by its rank 0 worker, has only this round's keys
            out.env.append({"name": "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "value": "1"})
        if backend == "c10d" and not _has(args, "--standalone"):
            out.env += [
                {"name": "PET_RDZV_ENDPOINT", "value": f"{job}-0.{job}:{MASTER_PORT}" if nodes > 1 else f"localhost:{MASTER_PORT}"},
                {"name": "PET_RDZV_ID", "value": job},
            ]  # fmt: skip
        if nodes * gpus > 1:
            out.env += [
                {"name": "PET_TEE", "value": "3"},
                {"name": "PET_LOG_DIR", "value": "$(LOG_DIR)/torchrun"},
                {"name": "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "value": "[rank${rank}]:"},
            ]
    elif kind == "accelerate" and nodes > 1:
        at = 2 if PurePosixPath(command[0]).name == "accelerate" else 1
        add: list[str] = []
        for flags, value in (
            (("--num_machines",), "$(PET_NNODES)"),
            (("--machine_rank",), "$(PET_NODE_RANK)"),
            (("--main_process_ip",), "$(PET_MASTER_ADDR)"),
            (("--main_process_port",), "$(PET_MASTER_PORT)"),
            (("--num_processes",), "$(WORLD_SIZE)"),
        ):
            if not _has(args, *flags):
                add += [flags[0], value]
        if not _has(
            args, "--multi_gpu", "--cpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--tpu"
        ):
            add.append("--multi_gpu")
        if add:
            out.command = command[:at] + add + command[at:]
            out.notes.append(
                "accelerate launch reads no environment for machines: lab adds " + " ".join(add[:2]) + " ... "
                "(docs/researchers.md, Launchers)"
            )
    elif kind == "deepspeed" and nodes > 1:
        add = []
        for flags, value in (
            (("--hostfile", "-H"), f"{HOSTFILE_DIR}/hostfile"),
            (("--node_rank",), "$(PET_NODE_RANK)"),
            (("--master_addr",), "$(PET_MASTER_ADDR)"),
            (("--master_port",), "$(PET_MASTER_PORT)"),
        ):
            if not _has(args, *flags):
                add += [flags[0], value]
        if not _has(args, "--no_ssh"):
            add.append("--no_ssh")
        out.command = command[:1] + add + command[1:]
        out.hostfile = "".join(f"{job}-{i}.{job} slots={gpus}\n" for i in range(nodes))
        out.notes.append(
            f"deepspeed: hostfile {HOSTFILE_DIR}/hostfile and --no_ssh on each node (docs/researchers.md)"
        )
    wrapped = shell_wrapped(out.command)
    if wrapped is not None:
        out.command = wrapped
        out.notes.append("the command has $ references: it runs under /bin/sh -c so they expand in the pod")
    return out
