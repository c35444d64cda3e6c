"""The demo's emulator process (`python -m demos.researcher.emulator`, the standalone emulator with the researcher's
kinds) serves Jobs, and is started and stopped by the demo's own process helper."""

from __future__ import annotations

import sys
import time

from kubernetes import client, config

from autoscaler.demo.processes import Child, Children
from clusterspec.loader import DEFAULT_SPEC


def test_the_demo_emulator_serves_jobs(tmp_path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    argv = [sys.executable, "-m", "demos.researcher.emulator", "--spec-groups", str(DEFAULT_SPEC),
            "--kubeconfig", str(kubeconfig)]  # fmt: skip
    with Children() as children:
        emulator = children.start(Child("emulator", argv, tmp_path))
        assert emulator.ready_line(60)["kubeconfig"] == str(kubeconfig)
        api = config.new_client_from_config(str(kubeconfig))
        job = {
            "metadata": {"name": "hello"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "main", "image": "busybox"}]}}},
        }  # fmt: skip
        client.CoreV1Api(api).create_namespace(
            {"metadata": {"name": "u-alice"}}
        )  # add-user's, on a real cluster
        client.BatchV1Api(api).create_namespaced_job("u-alice", job)
        time.sleep(0.5)  # the wall-clock model's controllers make the pod as soon as the write is through
        pods = client.CoreV1Api(api).list_namespaced_pod("u-alice").items
        assert [p.metadata.labels["batch.kubernetes.io/job-name"] for p in pods] == ["hello"]
        api.close()
    assert not emulator.running()
