"""The real ``autoscaler run`` process, event-driven, against a real control plane of its own (bare: the shared one
carries other tests' pending pods, which this autoscaler would plan for) and a moto server: it becomes ready,
scales up for a pod that appears while it runs (its watch, long before the 1 h periodic scan), serves /metrics,
and stops cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from clusterspec.loader import load_spec
from localcluster import binaries
from localcluster.processes import free_port
from localcluster.stack import Stack
from tests.autoscaler.aws_setup import SESSION, create_groups
from tests.autoscaler.moto_fixtures import _moto_server, moto_url  # noqa: F401 - fixtures
from tests.simulator.model.builders import pod
from tests.support import ROOT, require_tool

pytestmark = pytest.mark.e2e  # a control plane of its own


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""
    except OSError:
        return 0, ""


def wait_for(check, proc, timeout_s=30.0):
    """A correctness wait (a timeout, not a performance assertion); fails early when the process died."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert proc is None or proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.1)


def test_the_live_process(moto_url, tmp_path):  # noqa: F811
    for name in (*binaries.CONTROL_PLANE, "kwok"):
        require_tool(name, str(binaries.BIN / name))
    create_groups(load_spec(), moto_url, regions=["us-west-2"])
    port = free_port()
    stack = Stack(tmp_path / "stack").start()
    try:
        kubeconfig = stack.admin_kubeconfig
        stack.kubectl("create", "namespace", "lab")
        # the ServiceAccount admission refuses pods until the controller-manager has made "default"
        wait_for(
            lambda: stack.kubectl("-n", "lab", "get", "sa", "default", check=False).returncode == 0, None
        )
        env = {**os.environ, "AUTOSCALER_CLUSTER_NAME": "dlr", "AUTOSCALER_REGIONS": "us-west-2"}
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "autoscaler"), "run", "--kubeconfig", str(kubeconfig),
             "--aws-endpoint-url", moto_url, "--scan-interval", "1h", "--metrics-port", str(port)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(lambda: get(base + "/readyz")[0] == 200, proc)
            assert get(base + "/healthz")[0] == 200
            # a pod appears while the autoscaler runs: the watch brings the pass forward
            p = pod("train-0", gpus=8)
            p.update(apiVersion="v1", kind="Pod")
            for c in p["spec"]["containers"]:  # the real API server wants an extended resource's limit
                c["resources"]["limits"] = {"nvidia.com/gpu": c["resources"]["requests"]["nvidia.com/gpu"]}
            p["metadata"]["namespace"] = "lab"
            p["spec"]["nodeSelector"] = {"research.cluster/gpu-model": "v100"}
            stack.kubectl("create", "-f", "-", input=json.dumps(p))
            asg = SESSION.client("autoscaling", region_name="us-west-2", endpoint_url=moto_url)

            def scaled() -> bool:
                groups = asg.describe_auto_scaling_groups(AutoScalingGroupNames=["dlr-us-west-2-gpu-v100x8"])
                return groups["AutoScalingGroups"][0]["DesiredCapacity"] == 1

            wait_for(scaled, proc)  # long before the 1 h periodic scan
            line = 'autoscaler_scale_up_nodes_total{group="dlr-us-west-2-gpu-v100x8",region="us-west-2"} 1.0'
            wait_for(lambda: line in get(base + "/metrics")[1], proc)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        stack.stop()
