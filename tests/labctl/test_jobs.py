"""The submitted objects: valid for the cluster's Kubernetes (kubernetes-validate --strict), shaped for
distributed launchers, gang-declared as the autoscaler reads it, and bad input refused with one line."""

from __future__ import annotations

import pytest
import yaml
from kubernetes_validate import validate
from kubernetes_validate.utils import all_versions, latest_version

from clusterspec.loader import load_spec
from clusterspec.names import POD_GROUP_LABEL, POD_GROUP_SIZE_ANNOTATION
from labctl import jobs
from labctl.errors import LabError
from labctl.settings import Settings

SETTINGS = Settings(load_spec())
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/research:0123456789abcdef"


def _req(**kw) -> jobs.JobRequest:
    base = dict(name="resnet", namespace="u-alice", image=IMAGE, command=["torchrun", "train.py"], gpus=8)
    return jobs.JobRequest(**(base | kw))


def _version() -> str:
    """The spec's Kubernetes minor when kubernetes-validate has its schemas, else its newest."""
    minor = SETTINGS.spec.kubernetes.minor
    return f"{minor}.0" if f"{minor}.0" in all_versions() else latest_version()


@pytest.mark.parametrize("nodes,gang", [(1, False), (4, True), (2, False)])
def test_objects_pass_kubernetes_validate_strict(nodes: int, gang: bool) -> None:
    req = _req(nodes=nodes, gang=gang, region_pref=["us-east-1", "lab"])
    objs = [jobs.job_manifest(req, SETTINGS), jobs.service_manifest(req)]
    for obj in objs:
        for version in sorted({_version(), latest_version()}):
            validate(obj, version, strict=True)  # raises on any unknown or mistyped field


def test_pod_group_declares_the_gang_the_autoscaler_waits_for() -> None:
    req = _req(nodes=4, gang=True)
    template = jobs.job_manifest(req, SETTINGS)["spec"]["template"]
    assert template["metadata"]["labels"][POD_GROUP_LABEL] == "resnet"
    assert template["metadata"]["annotations"][POD_GROUP_SIZE_ANNOTATION] == "4"
    pg = jobs.podgroup_manifest(req)
    assert pg["spec"]["minMember"] == 4 and pg["metadata"]["name"] == "resnet"


def test_distributed_environment_and_shape() -> None:
    job = jobs.job_manifest(_req(nodes=2, gpus=8), SETTINGS)
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (
        "Indexed",
        2,
        2,
        0,
    )
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == "resnet" and pod["restartPolicy"] == "Never"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["containers"][0]["env"]}
    assert (
        env["MASTER_ADDR"] == "resnet-0.resnet" and env["WORLD_SIZE"] == "16" and env["NPROC_PER_NODE"] == "8"
    )
    assert env["NODE_RANK"] == {
        "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
    }
    res = pod["containers"][0]["resources"]
    assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"] == "8"
    assert {v["name"] for v in pod["volumes"]} == {"home", "datasets", "results", "dshm"}
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in pod["containers"][0]["volumeMounts"]}
    assert mounts == {"/home/researcher": False, "/datasets": True, "/results": False, "/dev/shm": False}
    assert env["HOME"] == "/home/researcher" and env["LOG_DIR"] == "/results/resnet"
    # the GPU groups' taint, and not the spot groups' (spot stays opt-in)
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]


def test_pods_run_as_the_researchers_uid() -> None:
    pod = jobs.job_manifest(_req(user="bob"), SETTINGS)["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsUser": 2002, "runAsGroup": 2002, "runAsNonRoot": True}
    assert (
        "securityContext"
        not in jobs.job_manifest(_req(user="stranger"), SETTINGS)["spec"]["template"]["spec"]
    )


def test_single_node_job_needs_no_service() -> None:
    pod = jobs.job_manifest(_req(nodes=1), SETTINGS)["spec"]["template"]["spec"]
    assert "subdomain" not in pod
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "localhost"


def test_region_preference_is_ordered_and_restricting() -> None:
    aff = jobs.job_manifest(_req(region_pref=["us-east-1", "us-west-2"]), SETTINGS)["spec"]["template"][
        "spec"
    ]["affinity"]
    required = aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert required == [{"matchExpressions": [{"key": "topology.kubernetes.io/region", "operator": "In",
                                               "values": ["us-east-1", "us-west-2"]}]}]  # fmt: skip
    weights = [p["weight"] for p in aff["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]]
    assert weights == sorted(weights, reverse=True) and weights[0] > weights[1]


CASES = yaml.safe_load(
    """
- {kw: {gpus: 9}, reason: "--gpus 9: no node type has more than 8 GPUs; ask for at most 8 per node and more --nodes"}
- {kw: {gpus: 8, region_pref: [lab]}, reason: "--gpus 8: no node type in lab has more than 4 GPUs; ask for at most 4 per node and more --nodes"}
- {kw: {region_pref: [eu-west-1]}, reason: "--region-pref: unknown region 'eu-west-1'; the cluster has us-west-2, us-east-1, us-east-2, lab"}
- {kw: {name: Resnet_1}, reason: "--name 'Resnet_1': Kubernetes needs lowercase letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. resnet-lr3)"}
- {kw: {name: 1resnet}, reason: "--name '1resnet': Kubernetes needs lowercase letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. resnet-lr3)"}
- {kw: {gpus: 0}, reason: "--gpus 0: give the GPUs per node, at least 1"}
- {kw: {command: []}, reason: "no command: put it after `--`, e.g. lab submit --gpus 8 -- python train.py"}
"""
)


@pytest.mark.parametrize("case", CASES, ids=[str(c["kw"]) for c in CASES])
def test_bad_requests_are_refused_with_one_line(case: dict) -> None:
    with pytest.raises(LabError) as e:
        jobs.check_request(_req(**case["kw"]), SETTINGS)
    assert e.value.lines == [case["reason"]]


def test_name_length_leaves_room_for_the_pod_hostname() -> None:
    jobs.check_name("a" * 61, nodes=2)  # a-...-1 is 63
    with pytest.raises(LabError, match="at most 61"):
        jobs.check_name("a" * 62, nodes=2)
    with pytest.raises(LabError, match="at most 60"):
        jobs.check_name("a" * 61, nodes=11)
