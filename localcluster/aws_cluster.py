"""The local cluster as AWS would run it: the real control plane (localcluster/stack.py), a control-plane Node as
kubeadm marks one, the node agent registering the embedded AWS's instances as Nodes (localcluster/nodes.py), what
`invoke up` deploys (localcluster/day_one.py), and the gang scheduler (scheduler-plugins, built by `make tools`)
running with the configuration and the ServiceAccount that deploy gives it."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from autoscaler.adapters.aws import AwsCloud
from clusterspec.scheduler import GANG_NAMESPACE, GANG_SCHEDULER
from clusterspec.spec import Cluster
from localcluster import binaries, day_one
from localcluster.kubelet.agent import ProcessKubelet
from localcluster.nodes import NodeAgent, allocatable
from localcluster.stack import KWOK_LABEL, Stack, compressed_backoff, compressed_overrides, with_backoff
from provision import scheduler

CONTROL_PLANE_NODE = "control-plane-0"


@dataclass
class Running:
    stack: Stack
    agent: NodeAgent
    admin_kubeconfig: Path
    api: k8s.ApiClient
    applied: list[day_one.Applied]
    kubelet: ProcessKubelet | None = None


def control_plane_node(cluster: Cluster) -> dict:
    """The control-plane member as `kubeadm init` registers and marks it (its label and NoSchedule taint)."""
    capacity, alloc = allocatable(cluster.kubernetes.control_plane.instance_type)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": CONTROL_PLANE_NODE,
                     "labels": {KWOK_LABEL: "fake", "node-role.kubernetes.io/control-plane": "", "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": CONTROL_PLANE_NODE,
                                "node.kubernetes.io/instance-type": cluster.kubernetes.control_plane.instance_type}},
        "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
        "status": {"capacity": capacity, "allocatable": alloc,
                   "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]},
    }  # fmt: skip


def service_account_kubeconfig(stack: Stack, namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig with a TokenRequest token of the ServiceAccount (as the kubelet projects one into its pod)."""
    token = stack.kubectl("create", "token", name, "-n", namespace, "--duration=24h").stdout.strip()
    doc = yaml.safe_load(stack.admin_kubeconfig.read_text())
    user = f"system:serviceaccount:{namespace}:{name}"
    doc["users"] = [{"name": user, "user": {"token": token}}]
    doc["contexts"][0]["context"].update(user=user, namespace=namespace)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


def start_gang_scheduler(stack: Stack, out: Path) -> None:
    """scheduler-plugins' scheduler with the gang scheduler's configuration as deployed, as its ServiceAccount."""
    kubeconfig = service_account_kubeconfig(
        stack, GANG_NAMESPACE, GANG_SCHEDULER, out / "gang-scheduler.conf"
    )
    config = scheduler.gang_scheduler_config()
    config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    # one replica here (the deployed Deployment runs two and keeps leader election): no Lease renewed every 2 s
    config["leaderElection"] = {"leaderElect": False}
    if stack.scheduler_backoff_s is not None:  # as the control plane's (stack.compressed_backoff)
        config = with_backoff(config, stack.scheduler_backoff_s)
    path = out / "gang-scheduler-config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    port = stack.ports.scheduler + 1 if stack.ports else 0
    stack.processes.start("gang-scheduler", [str(binaries.path("scheduler")), f"--config={path}",
                                             "--bind-address=127.0.0.1", f"--secure-port={port}"],
                          env={"PATH": binaries.on_path(), "HOME": str(out)})  # fmt: skip


@contextmanager
def running(cluster: Cluster, aws_url: str, regions: list[str], out: Path, compression: float = 1.0,
            outputs: day_one.Outputs | None = None, gang_scheduler: bool = True,
            pods: Path | None = None, idle_poll_s: float | None = None):  # fmt: skip
    """Everything up, yields :class:`Running`; everything stopped after. With ``pods`` (a folder every uid may
    enter), every node is the process kubelet's, which runs the pods of this repository's images there as local
    processes (their folders under ``pods``): a job's pods, and the pods `lab` starts on CPU nodes beside it."""
    out.mkdir(parents=True, exist_ok=True)
    stack = Stack(out / "control-plane", overrides=compressed_overrides(compression),
                  scheduler_backoff_s=compressed_backoff(compression))  # fmt: skip
    agent = kubelet = None
    try:
        stack.start()
        stack.kubectl("create", "-f", "-", input=json.dumps(control_plane_node(cluster)))
        applied = day_one.apply(str(binaries.path("kubectl")), stack.admin_kubeconfig,
                                day_one.render(cluster, out / "deploy", outputs or day_one.Outputs()))  # fmt: skip
        refused = [f"{a.manifest.label}: {r}" for a in applied for r in a.refusals]
        if refused:
            raise RuntimeError("the API server refused what `invoke up` deploys: " + "; ".join(refused))
        if gang_scheduler and not binaries.missing(("scheduler",)):
            start_gang_scheduler(stack, out)
        api = k8s_config.new_client_from_config(config_file=str(stack.admin_kubeconfig))
        env_keys = {"AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo"}
        for k, v in env_keys.items():
            os.environ.setdefault(k, v)
        cloud = AwsCloud(cluster.name, regions, endpoint_url=aws_url)
        if pods is not None:
            kubelet = ProcessKubelet(api, pods).start()
        # with idle_poll_s, the agent watches pods pending on no node and the Nodes, and polls the embedded AWS that
        # seldom while nothing is on its way (the idle `invoke local-cluster`); else every 0.5 s throughout
        agent = NodeAgent(cloud, api, compression=compression, process_nodes="all" if pods is not None else "",
                          idle_s=idle_poll_s, watch=idle_poll_s is not None).start()  # fmt: skip
        try:
            yield Running(stack, agent, stack.admin_kubeconfig, api, applied, kubelet)
        except BaseException:
            dump_state(stack, out / "state-at-failure.txt")
            raise
    finally:
        if agent is not None:
            agent.stop()
        if kubelet is not None:
            kubelet.stop()
        stack.stop()


def dump_state(stack: Stack, path: Path) -> None:
    """What the cluster looked like (nodes, jobs, pods, pod groups, recent events), for the one who reads why."""
    parts = []
    for args in (("get", "nodes", "-o", "wide"), ("get", "jobs,podgroups,pods", "-A", "-o", "wide"),
                 ("get", "events", "-A", "--sort-by=.lastTimestamp")):  # fmt: skip
        done = stack.kubectl(*args, check=False)
        parts.append(f"$ kubectl {' '.join(args)}\n{done.stdout}{done.stderr}")
    path.write_text("\n".join(parts))


def kubectl_env(run: Running) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(run.admin_kubeconfig), "PATH": binaries.on_path()}


def describe_pending(run: Running, namespace: str) -> str:
    done = subprocess.run([str(binaries.path("kubectl")), "--kubeconfig", str(run.admin_kubeconfig), "-n",
                           namespace, "get", "pods", "--field-selector=status.phase=Pending", "-o", "name"],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    return done.stdout.strip()
