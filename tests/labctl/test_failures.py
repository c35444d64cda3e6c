"""Failures as lab's podFailurePolicy says (labctl/jobs.py), on the real local cluster (tests/labctl/real_lab.py): the
real Job controller, pod garbage collector and autoscaler, the pods run as processes by the process kubelet. A node
lost under a job (its instance terminated in the embedded AWS, the Node deleted with it as the cloud node lifecycle
controller deletes it) is a disruption: kube-controller-manager's PodGC marks the orphaned pod Failed with
DisruptionTarget, the Job counts it and goes on with a replacement on a node the autoscaler buys, up to --retries
times; an application error (a non-zero exit of the code itself) fails the job at once."""

from __future__ import annotations

import time

import boto3
import pytest

from labctl.cli import main

pytestmark = pytest.mark.e2e


def _lab(capsys, *argv: str) -> int:
    with pytest.raises(SystemExit) as e:
        main(["-n", "u-alice", *argv])
    capsys.readouterr()
    return e.value.code


def _running(lab, job: str, timeout_s: float = 180.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        running = [p for p in lab.pods(job) if p["status"].get("phase") == "Running" and
                   not p["metadata"].get("deletionTimestamp")]  # fmt: skip
        if running:
            return running[0]
        time.sleep(0.5)
    raise AssertionError(
        f"no pod of {job} running after {timeout_s} s: {[p['status'] for p in lab.pods(job)]}"
    )


def _lose_the_node(lab, pod: dict) -> None:
    """The instance under ``pod`` terminated (spot reclaimed, hardware lost), as AWS ends it."""
    from kubernetes import client

    node = client.CoreV1Api(lab.api()).read_node(pod["spec"]["nodeName"])
    instance = node.spec.provider_id.rsplit("/", 1)[-1]
    region = node.metadata.labels["topology.kubernetes.io/region"]
    asg = boto3.client("autoscaling", endpoint_url=lab.moto_url, region_name=region,
                       aws_access_key_id="demo", aws_secret_access_key="demo")  # fmt: skip
    asg.terminate_instance_in_auto_scaling_group(InstanceId=instance, ShouldDecrementDesiredCapacity=True)


def _failed_as_disrupted(lab, job: str, name: str, timeout_s: float = 150.0) -> dict:
    """The Job once it has counted pod ``name`` (PodGC's quarantine of orphaned pods is 40 s, its period 20 s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = (lab.job(job) or {}).get("status") or {}
        if name not in {p["metadata"]["name"] for p in lab.pods(job)} and status.get("failed"):
            return status
        time.sleep(0.5)
    raise AssertionError(f"pod {name} of {job} not counted in {timeout_s} s: {lab.job(job)}")


def test_a_lost_node_is_retried_and_the_retries_are_bounded(lab_on_real, project, capsys) -> None:
    lab = lab_on_real
    (project / "train.py").write_text("import time\nprint('training', flush=True)\ntime.sleep(600)\n")
    assert _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "T4", "--retries", "1", "--name", "spot",
                "--path", str(project), "--", "python", "train.py") == 0  # fmt: skip
    pod = _running(lab, "spot")
    _lose_the_node(lab, pod)
    status = _failed_as_disrupted(lab, "spot", pod["metadata"]["name"])
    assert status["failed"] == 1 and not any(c["type"] == "Failed" for c in status.get("conditions") or ())
    replacement = _running(lab, "spot")  # counted, replaced on a node bought for it: the job goes on
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]
    assert replacement["spec"]["nodeName"] != pod["spec"]["nodeName"]
    _lose_the_node(lab, replacement)  # the second disruption is one more than --retries 1
    job = lab.wait("spot", timeout_s=150)
    conds = {c["type"]: c for c in job["status"].get("conditions") or ()}
    assert conds["Failed"]["reason"] == "BackoffLimitExceeded", conds
    assert job["status"]["failed"] == 2


def test_an_application_error_fails_the_job_at_once(lab_on_real, project, capsys) -> None:
    lab = lab_on_real
    (project / "train.py").write_text("import sys\nprint('diverged')\nsys.exit(3)\n")
    assert _lab(capsys, "submit", "--gpus", "1", "--gpu-type", "T4", "--name", "bug", "--path", str(project),
                "--", "python", "train.py") == 0  # fmt: skip
    job = lab.wait("bug", timeout_s=180)
    conds = {c["type"]: c for c in job["status"].get("conditions") or ()}
    assert conds["Failed"]["reason"] == "PodFailurePolicy", (conds, lab.tails("bug"))
    assert "exit code 3 matching FailJob rule at index 1" in conds["Failed"]["message"]
    assert len(lab.pods("bug")) == 1  # never retried
