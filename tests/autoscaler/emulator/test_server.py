"""The standalone server: the command line, the kubeconfig, a wall-clock model that moves by itself."""

from __future__ import annotations

import json
import subprocess
import sys

from kubernetes import client, config, watch

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, ModelCloud, WallClock
from tests.autoscaler.model.builders import group
from tests.support import ROOT, load_yaml


def test_command_line_serves_the_spec_groups_and_writes_a_kubeconfig(tmp_path):
    kc = tmp_path / "kc.yaml"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autoscaler.emulator",
            "--spec-groups",
            str(ROOT / "cluster.yaml"),
            "--kubeconfig",
            str(kc),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        ready = json.loads(proc.stdout.readline())
        assert ready["url"].startswith("https://127.0.0.1:"), "the secure port only"
        server = load_yaml(kc)["clusters"][0]["cluster"]["server"]
        assert server == ready["url"]
        nodes = client.CoreV1Api(config.new_client_from_config(str(kc))).list_node().to_dict()["items"]
        nodes = [{"metadata": {"labels": n["metadata"]["labels"]}} for n in nodes]
        groups = sorted(n["metadata"]["labels"]["research.cluster/node-group"] for n in nodes)
        assert groups == ["dlr-us-east-1-cpu", "dlr-us-east-2-cpu", "dlr-us-west-2-cpu"], "min 1 per region"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_wall_clock_model_registers_nodes_by_itself_and_watches_see_them(tmp_path):
    model = ClusterModel(WallClock(compression=1000), [group()])
    with Emulator(model) as emu:
        core = client.CoreV1Api(config.new_client_from_config(str(emu.write_kubeconfig(tmp_path / "kc"))))
        rv = core.list_node().metadata.resource_version
        with model.lock:
            ModelCloud(model).set_desired("g8", 1)  # 270 s of boot at 1000x: 0.27 s
        events = watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=5)
        first = next(iter(events))
        assert first["type"] == "ADDED"
        assert first["object"].metadata.labels["node.kubernetes.io/instance-type"] == "p3.16xlarge"
