"""kubectl, an independent client, on what `lab submit` creates on the real control plane (the shared `kube`):
the Job and its Indexed pods, made by the real Job controller, are listed through discovery with alice's own
kubeconfig, and deleting the Job takes its pods (the real garbage collector)."""

from __future__ import annotations

import json

import pytest

from labctl.cli import main

pytestmark = pytest.mark.tool


def test_kubectl_sees_the_job_and_its_pods_and_deletes_them(alice, lab_env, project, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--kubeconfig", lab_env, "submit", "--no-build", "--gpus", "4", "--nodes", "3", "--name", "sweep",
              "--path", str(project), "--", "python", "train.py"])  # fmt: skip
    assert e.value.code == 0, capsys.readouterr().err

    def kubectl(*argv: str) -> str:  # as alice
        return alice.kube.kubectl(*argv, kubeconfig=alice.kubeconfig, check=True).stdout

    ns = alice.namespace
    job = alice.wait("the Job controller's 3 pods", lambda: (j := json.loads(kubectl(
        "get", "job", "sweep", "-n", ns, "-o", "json"))).get("status", {}).get("active") == 3 and j)  # fmt: skip
    assert job["spec"]["completionMode"] == "Indexed"
    pods = json.loads(kubectl("get", "pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=sweep",
                              "-o", "json"))["items"]  # fmt: skip
    assert sorted(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods) == [
        "0",
        "1",
        "2",
    ]
    assert "sweep" in kubectl("get", "svc", "-n", ns)
    kubectl("delete", "job", "sweep", "-n", ns)  # kubectl's default: background propagation
    alice.wait(
        "the job's pods deleted by the garbage collector",
        lambda: json.loads(kubectl("get", "pods", "-n", ns, "-o", "json"))["items"] == [],
    )
