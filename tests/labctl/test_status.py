"""`lab status` says why (labctl/status.py): the cases in cases/status.yaml, then the row's columns, and the command
on the shared real control plane: a job over its namespace's GPU quota shows the quota's numbers as the real
Job controller's FailedCreate Event words them, -o json the same rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from labctl import status
from tests.support import load_yaml

CASES = load_yaml(Path(__file__).parent / "cases" / "status.yaml")


def _job(extra: dict) -> dict:
    return {"metadata": {"name": "train", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}, **extra}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_state_and_its_reason(case: dict) -> None:
    assert status.explain(_job(case["job"]), case["pods"], case["events"]) == (case["state"], case["reason"])


def test_the_row_has_age_gpu_type_and_region() -> None:
    job = _job({"status": {"active": 1}})
    job["metadata"]["annotations"] = {
        "research.cluster/gpu-type": "A100",
        "research.cluster/region-pref": "us-east-1",
    }
    job["spec"] = {
        "completions": 2,
        "template": {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}]}},
    }
    pods = [{"metadata": {"name": "train-0-a"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}},
            {"metadata": {"name": "train-1-b"}, "spec": {}, "status": {"phase": "Pending"}}]  # fmt: skip
    row = status.row(job, pods, [], {"n1": "us-west-2"}, now=datetime(2026, 1, 1, 2, 5, tzinfo=UTC))
    assert (row["age"], row["nodes"], row["gpus_per_node"], row["gpu_type"], row["region"]) == (
        "2h", 2, 8, "A100", "us-west-2")  # fmt: skip
    assert row["pods"][1] == {"name": "train-1-b", "phase": "Pending", "node": None}
    json.dumps(row)  # -o json prints it as it is
    del pods[0]["spec"]["nodeName"]
    assert status.row(job, pods, [], {})["region"] == "us-east-1"  # where it may go, before it is anywhere
    assert [status.age(t, datetime(2026, 1, 1, 0, 1, 5, tzinfo=UTC)) for t in ("2026-01-01T00:01:00Z",
            "2026-01-01T00:00:00Z", None)] == ["5s", "1m", "-"]  # fmt: skip


def _lab(lab_env, capsys, *argv: str) -> tuple[int, str, str]:
    from labctl.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--kubeconfig", lab_env, *argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_over_quota_shows_the_quotas_numbers(alice, lab_env, project, capsys) -> None:
    """The namespace's GPU quota (provision/tenancy.py writes one per researcher) refuses the pod: the Job
    controller's FailedCreate Event, as kube-apiserver's quota admission words it, is the reason."""
    alice.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": alice.namespace},
         "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}))  # fmt: skip
    alice.wait("the quota's usage counted", lambda: "requests.nvidia.com/gpu" in (
        (alice.get("resourcequota", "gpus") or {}).get("status", {}).get("used") or {}))  # fmt: skip
    code, _, err = _lab(lab_env, capsys, "submit", "--no-build", "--gpus", "8", "--gpu-type", "V100", "--name",
                        "big", "--path", str(project), "--", "python", "train.py")  # fmt: skip
    assert code == 0, err
    alice.wait("the Job controller tries, and is refused", lambda: any(
        e["reason"] == "FailedCreate" for e in alice.items("events")))  # fmt: skip
    code, out, _ = _lab(lab_env, capsys, "status")
    header, line = out.splitlines()
    assert header.split() == ["JOB", "STATE", "AGE", "NODES", "GPUS", "GPU-TYPE", "REGION", "PODS", "REASON"]
    assert line.split()[:7] == ["big", "WaitingForQuota", line.split()[2], "1", "8", "V100", "any"]
    assert "exceeded quota: gpus" in line and "requested: requests.nvidia.com/gpu=8" in line
    assert "limited: requests.nvidia.com/gpu=4" in line
    code, out, _ = _lab(lab_env, capsys, "status", "-o", "json")
    (row,) = json.loads(out)["jobs"]
    assert (row["job"], row["state"], row["gpu_type"]) == ("big", "WaitingForQuota", "V100")
    assert "exceeded quota" in row["reason"]
