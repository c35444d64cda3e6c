"""A multi-GPU job submitted with `lab` in the demo's setting (the spec's groups, no GPU node yet) makes the
planner scale up: `autoscaler plan` on a snapshot of the job's pods as the real Job controller made them on the
shared real control plane, read over the wire with alice's kubeconfig. The snapshot holds alice's namespace's pods
and no node: the shared control plane's other nodes and pods are other tests'."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from kubernetes import client, config

from clusterspec.loader import load_spec
from labctl.cli import main
from tests.labctl.conftest import groups


def _snapshot(alice, pods: int) -> dict:
    api = config.new_client_from_config(alice.kubeconfig)
    core = client.CoreV1Api(api)

    def listed():
        got = api.sanitize_for_serialization(core.list_namespaced_pod(alice.namespace))["items"]
        return got if len(got) == pods else None

    try:
        items = alice.wait(f"the Job controller's {pods} pods", listed)
        assert core.list_node().items is not None  # alice reads the nodes the planner reads (research-viewer)
    finally:
        api.close()
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"pods": items, "nodes": [], "groups": groups(alice.spec), "regions": load_spec().spill_over_order,
            "now": now}  # fmt: skip


def _plan(path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "autoscaler", "plan", str(path), "--json"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("gang", [True, False])
def test_a_two_node_eight_gpu_job_scales_an_eight_gpu_group_by_two(
    alice, lab_env, project, tmp_path, gang
) -> None:
    argv = ["--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "8", "--nodes", "2", "--name", "big",
            "--path", str(project), "--", "torchrun", "train.py"]  # fmt: skip
    argv.insert(3, "--gang" if gang else "--no-gang")
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(_snapshot(alice, 2), default=str))
    plan = _plan(path)
    # the first region's highest-priority 8-GPU group (V100 x8) gets both nodes, in one region, in one pass
    assert plan["scale_up"] == {"dlr-us-west-2-gpu-v100x8": 2}
    triggered = [ev for ev in plan["events"] if ev["reason"] == "TriggeredScaleUp"]
    assert sorted(ev["pod"].split("/")[0] for ev in triggered) == [alice.namespace] * 2


def test_region_preference_restricts_where_capacity_is_added(alice, lab_env, project, tmp_path) -> None:
    """--region-pref us-east-2,us-east-1: only those regions. New nodes follow the cluster's spill-over order among
    them (us-east-1 before us-east-2), as cluster-autoscaler's scale-up also simulates required affinity only; the
    listed order is a scheduling preference among nodes that exist."""
    with pytest.raises(SystemExit):
        main(["--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "8", "--nodes", "2", "--gang",
              "--region-pref", "us-east-2,us-east-1", "--name", "east", "--path", str(project), "--", "true"])  # fmt: skip
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(_snapshot(alice, 2), default=str))
    assert _plan(path)["scale_up"] == {"dlr-us-east-1-gpu-v100x8": 2}
