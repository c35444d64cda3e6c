"""The kinds of the researcher's path, served as every other kind (no opt-in), through the official client: Job
validation as the API server's (cases in researcher_job_cases.yaml), the Job controller's pods
(autoscaler/model/controllers/jobs.py), status from the pods, cascade on delete, and the namespace lifecycle."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from kubernetes import client, config

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.support import load_yaml

CASES = load_yaml(Path(__file__).parent / "researcher_job_cases.yaml")
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train"},
    "spec": {
        "completionMode": "Indexed",
        "completions": 2,
        "parallelism": 2,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "main", "image": "img", "resources": {"requests": {"nvidia.com/gpu": "8"}}}
                ],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            }
        },
    },
}


@pytest.fixture
def emu():
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), [group(desired=2)])
    with Emulator(model) as e:
        e.create_namespace("lab")
        yield e


@pytest.fixture
def api(emu, tmp_path):
    c = config.new_client_from_config(str(emu.write_kubeconfig(tmp_path / "kubeconfig")))
    yield c
    c.close()


def _set(obj: dict, path: str, value) -> dict:
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = obj
    for p in parents:
        node = node[p]
    if value is None:
        node.pop(last)
    else:
        node[last] = value
    return obj


@pytest.mark.parametrize("case", CASES, ids=[c["rule"] for c in CASES])
def test_invalid_jobs_are_refused_like_the_api_server(api, emu, case) -> None:
    job = JOB
    for path, value in case["set"].items():
        job = _set(job, path, value)
    with pytest.raises(client.exceptions.ApiException) as e:
        client.BatchV1Api(api).create_namespaced_job("lab", job)
    assert e.value.status == 422 and case["message"] in e.value.body
    with emu.model.lock:
        assert emu.model.store.list("jobs") == [] and emu.model.store.list("pods", "lab") == []


def test_the_job_controller_makes_indexed_pods_and_status_follows_them(api, emu) -> None:
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    created = batch.create_namespaced_job("lab", JOB)
    pods = sorted(core.list_namespaced_pod("lab").items, key=lambda p: p.metadata.name)
    assert [p.spec.hostname for p in pods] == ["train-0", "train-1"]
    assert [p.metadata.name.rsplit("-", 1)[0] for p in pods] == ["train-0", "train-1"]
    for p in pods:
        owner = p.metadata.owner_references[0]
        assert (owner.kind, owner.uid, owner.controller) == ("Job", created.metadata.uid, True)
        assert (
            p.metadata.labels["batch.kubernetes.io/controller-uid"]
            == created.spec.selector.match_labels["batch.kubernetes.io/controller-uid"]
        )
        env = {e.name: e.value_from.field_ref.field_path for e in p.spec.containers[0].env}
        assert (
            env["JOB_COMPLETION_INDEX"] == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        )
    with emu.model.lock:
        emu.model.advance(1)
    status = batch.read_namespaced_job("train", "lab").status
    assert (status.active, status.succeeded, status.failed) == (2, 0, 0)
    batch.delete_namespaced_job("train", "lab", propagation_policy="Background")
    assert core.list_namespaced_pod("lab").items == []


def test_namespaces_are_created_once_and_deleted_with_what_they_hold(api, emu) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "u-carol"}})
    with pytest.raises(client.exceptions.ApiException) as e:
        core.create_namespace({"metadata": {"name": "u-carol"}})
    assert e.value.status == 409
    assert "u-carol" in [n.metadata.name for n in core.list_namespace().items]
    client.BatchV1Api(api).create_namespaced_job("u-carol", JOB)
    core.delete_namespace("u-carol")
    with emu.model.lock:
        assert emu.model.store.list("jobs", "u-carol") == [] and emu.model.store.list("pods", "u-carol") == []
