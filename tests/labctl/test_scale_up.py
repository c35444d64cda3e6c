"""A multi-GPU job submitted with `lab` in the demo's setting (the spec's groups, no GPU node yet) makes the
planner scale up: `autoscaler plan` on a snapshot of the emulator holding the Job's pods, read over the wire."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from kubernetes import client, config

from autoscaler.model.adapters import ModelCloud
from clusterspec.loader import load_spec
from labctl.cli import main


def _snapshot(emu, kubeconfig: str) -> dict:
    api = config.new_client_from_config(kubeconfig)
    core = client.CoreV1Api(api)
    pods = api.sanitize_for_serialization(core.list_pod_for_all_namespaces())
    nodes = api.sanitize_for_serialization(core.list_node())
    api.close()
    with emu.model.lock:
        groups = ModelCloud(emu.model).list_groups()
        now = datetime.fromtimestamp(emu.model.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"pods": pods["items"], "nodes": nodes["items"], "groups": groups,
            "regions": load_spec().spill_over_order, "now": now}  # fmt: skip


@pytest.mark.parametrize("gang", [True, False])
def test_a_two_node_eight_gpu_job_scales_an_eight_gpu_group_by_two(
    emu, lab_env, project, tmp_path, gang
) -> None:
    argv = ["--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "8", "--nodes", "2", "--name", "big",
            "--path", str(project), "--", "torchrun", "train.py"]  # fmt: skip
    if gang:
        argv.insert(3, "--gang")
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(_snapshot(emu, lab_env), default=str))
    proc = subprocess.run(
        [sys.executable, "-m", "autoscaler", "plan", str(path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    # the first region's highest-priority 8-GPU group (V100 x8) gets both nodes, in one region, in one pass
    assert plan["scale_up"] == {"dlr-us-west-2-gpu-v100x8": 2}
    triggered = [ev for ev in plan["events"] if ev["reason"] == "TriggeredScaleUp"]
    assert sorted(ev["pod"].split("/")[0] for ev in triggered) == ["u-alice", "u-alice"]


def test_region_preference_restricts_where_capacity_is_added(emu, lab_env, project, tmp_path) -> None:
    """--region-pref us-east-2,us-east-1: only those regions. New nodes follow the cluster's spill-over order among
    them (us-east-1 before us-east-2), as cluster-autoscaler's scale-up also simulates required affinity only; the
    listed order is a scheduling preference among nodes that exist."""
    with pytest.raises(SystemExit):
        main(["--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "8", "--nodes", "2", "--gang",
              "--region-pref", "us-east-2,us-east-1", "--name", "east", "--path", str(project), "--", "true"])  # fmt: skip
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(_snapshot(emu, lab_env), default=str))
    proc = subprocess.run(
        [sys.executable, "-m", "autoscaler", "plan", str(path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["scale_up"] == {"dlr-us-east-1-gpu-v100x8": 2}
