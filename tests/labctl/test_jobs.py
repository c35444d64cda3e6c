"""The submitted objects: valid for the cluster's Kubernetes (kubernetes-validate --strict), shaped for distributed
launchers, gangs for the gang scheduler, the right hardware, failures retried only when the node went away, Pod
Security restricted, and bad input refused with one line."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes_validate import validate
from kubernetes_validate.utils import all_versions, latest_version

from clusterspec.loader import load_spec
from clusterspec.names import EFA_RESOURCE, NODE_GROUP_LABEL, POD_GROUP_LABEL, POD_GROUP_SIZE_ANNOTATION
from clusterspec.scheduler import GANG_SCHEDULER
from labctl import jobs
from labctl.errors import LabError
from tests.labctl.settings import SETTINGS
from tests.provision.pod_security import violations

IMAGE = SETTINGS.standard_image
URL = "s3://dlr-results-123456789012/alice/.lab/code/" + "ab" * 32 + ".tar.gz"


def _req(**kw) -> jobs.JobRequest:
    base = dict(name="resnet", namespace="u-alice", image=IMAGE, command=["torchrun", "train.py"], gpus=8,
                user="alice", code_url=URL, code_sha256="ab" * 32, code_tag="ab" * 8)  # fmt: skip
    return jobs.JobRequest(**(base | kw))


def _version() -> str:
    minor = load_spec().kubernetes.minor
    return f"{minor}.0" if f"{minor}.0" in all_versions() else latest_version()


def _pod(**kw) -> dict:
    return jobs.job_manifest(_req(**kw), SETTINGS)["spec"]["template"]["spec"]


def _env(pod: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["containers"][0]["env"]}


@pytest.mark.parametrize(
    "kw",
    [{"nodes": 1}, {"nodes": 4, "gang": True}, {"nodes": 2, "gpu_type": "A100"}, {"nodes": 2, "spot": True, "gpus": 4},
     {"nodes": 2, "command": ["deepspeed", "train.py"]}, {"nodes": 1, "region_pref": ["us-east-1", "lab"]}],
)  # fmt: skip
def test_objects_pass_kubernetes_validate_strict(kw: dict) -> None:
    for obj in jobs.manifests(_req(**kw), SETTINGS):
        if obj["kind"] == "PodGroup":
            continue  # a custom resource (scheduler-plugins' CRD), not in the built-in schemas
        for version in sorted({_version(), latest_version()}):
            validate(obj, version, strict=True)  # raises on any unknown or mistyped field


def test_gang_pods_name_the_gang_scheduler_and_declare_the_group() -> None:
    req = _req(nodes=4, gang=True)
    template = jobs.job_manifest(req, SETTINGS)["spec"]["template"]
    assert template["spec"]["schedulerName"] == GANG_SCHEDULER  # the default scheduler never binds them
    assert template["metadata"]["labels"][POD_GROUP_LABEL] == "resnet"
    assert template["metadata"]["annotations"][POD_GROUP_SIZE_ANNOTATION] == "4"
    pg = jobs.podgroup_manifest(req)
    assert pg["spec"]["minMember"] == 4 and pg["metadata"]["name"] == "resnet"
    assert "schedulerName" not in _pod(nodes=1)  # not a gang: the default scheduler


def test_the_code_is_unpacked_into_a_working_directory_the_job_owns() -> None:
    pod = _pod()
    init, deps = pod["initContainers"]
    main = pod["containers"][0]
    assert init["image"] == main["image"] == IMAGE  # no second image to pull
    assert init["command"][:2] == ["python3", "-c"] and "tarfile" in init["command"][2]
    init_env = {e["name"]: e["value"] for e in init["env"]}
    assert init_env["LAB_CODE_URL"] == URL and init_env["LAB_CODE_DIR"] == "/workspace"
    assert main["workingDir"] == "/workspace"
    workspace = next(v for v in pod["volumes"] if v["name"] == "workspace")
    assert workspace == {"name": "workspace", "emptyDir": {}}  # writable by the pod's uid
    assert {"name": "workspace", "mountPath": "/workspace"} in main["volumeMounts"]
    assert _env(pod)["LOG_DIR"] == "/results/resnet"  # where results persist


def test_torchrun_gets_nodes_rank_and_rendezvous_as_pytorchjob_sets_them() -> None:
    pod = _pod(nodes=2, gpus=8)
    env = _env(pod)
    index = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    assert env["PET_NNODES"] == "2" and env["PET_NPROC_PER_NODE"] == "8" and env["PET_NODE_RANK"] == index
    assert env["PET_MASTER_ADDR"] == env["MASTER_ADDR"] == "resnet-0.resnet"
    assert env["PET_MASTER_PORT"] == env["MASTER_PORT"] == "29500"
    assert env["WORLD_SIZE"] == "16" and env["NODE_RANK"] == index and env["PYTHONUNBUFFERED"] == "1"
    assert "RANK" not in env  # a pod-level RANK would make `python train.py` think it runs under torchrun
    # nothing added but lab's entry (the job's venv on PATH, the output teed to $LOG_DIR)
    assert pod["containers"][0]["command"] == jobs.entry_command(["torchrun", "train.py"])
    assert env["PET_TEE"] == "3" and env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] == "[rank${rank}]:"
    assert pod["subdomain"] == "resnet" and pod["restartPolicy"] == "Never"


def test_tf_config_names_every_worker_and_this_pods_index() -> None:
    env = _env(_pod(nodes=3, command=["python", "train_tf.py"]))
    cfg = json.loads(env["TF_CONFIG"].replace("$(NODE_RANK)", "2"))  # Kubernetes expands it from NODE_RANK
    assert cfg == {"cluster": {"worker": ["resnet-0.resnet:2222", "resnet-1.resnet:2222", "resnet-2.resnet:2222"]},
                   "task": {"type": "worker", "index": 2}}  # fmt: skip
    names = [e["name"] for e in _pod(nodes=3)["containers"][0]["env"]]
    assert names.index("NODE_RANK") < names.index("TF_CONFIG")  # defined before it, so it expands


def test_env_flags_win_over_labs_own() -> None:
    env = _env(_pod(env=(("LR", "3e-4"), ("PET_TEE", "0"))))
    assert env["LR"] == "3e-4" and env["PET_TEE"] == "0"
    with pytest.raises(LabError, match="--env 'LR': give KEY=VALUE"):
        jobs.parse_env(["LR"])


def test_failures_retry_disruptions_only() -> None:
    spec = jobs.job_manifest(_req(nodes=2, retries=3), SETTINGS)["spec"]
    assert spec["backoffLimit"] == 6  # each disruption can fail every member of the gang once
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {
        "action": "Count",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    assert rules[1] == {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}


def test_pods_pass_pod_security_restricted() -> None:
    for kw in ({}, {"nodes": 2, "gpu_type": "A100"}, {"nodes": 2, "command": ["deepspeed", "t.py"]},
               {"install": ("-r", "requirements.txt")}):  # fmt: skip
        assert violations(_pod(**kw)) == []
    sc = _pod(user="bob")["securityContext"]
    assert (sc["runAsUser"], sc["runAsGroup"], sc["runAsNonRoot"]) == (2002, 2002, True)
    with pytest.raises(LabError, match="user 'stranger' has no uid in the cluster's settings"):
        _pod(user="stranger")


def test_gpu_type_chooses_the_groups_and_servers_of_that_model() -> None:
    aff = _pod(gpu_type="A100")["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (term,) = aff["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["key"] == NODE_GROUP_LABEL
    assert term["matchExpressions"][0]["values"] == sorted(f"dlr-{r}-gpu-a100x8" for r in ("us-west-2", "us-east-1", "us-east-2"))  # fmt: skip
    titan = _pod(gpu_type="Titan X", gpus=4)["affinity"]["nodeAffinity"]
    terms = titan["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                            "values": ["titan-01", "titan-02", "titan-03", "titan-04"]}]}]  # fmt: skip
    v100 = _pod(gpu_type="v100", region_pref=["us-east-1"])["affinity"]["nodeAffinity"]
    assert v100["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "values"] == ["dlr-us-east-1-gpu-v100x8"]  # fmt: skip


def test_spot_is_opt_in() -> None:
    on_demand = _pod(gpus=1)["tolerations"]
    assert on_demand == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]
    spot = _pod(gpus=4, spot=True)
    keys = {t["key"] for t in spot["tolerations"]}
    assert keys == {"nvidia.com/gpu", "research.cluster/spot"}
    term = spot["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]
    assert all("spot" in g for g in term["matchExpressions"][0]["values"])


def test_multi_node_jobs_on_efa_types_request_efa_and_get_its_environment() -> None:
    pod = _pod(nodes=2, gpu_type="A100")
    res = pod["containers"][0]["resources"]
    assert res["requests"][EFA_RESOURCE] == res["limits"][EFA_RESOURCE] == "4"  # p4d.24xlarge's four
    env = _env(pod)
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert EFA_RESOURCE not in _pod(nodes=1, gpu_type="A100")["containers"][0]["resources"]["requests"]
    # candidates without EFA (V100 p3.16xlarge): no request, which would keep the job off them
    assert EFA_RESOURCE not in _pod(nodes=2)["containers"][0]["resources"]["requests"]


def test_default_names_differ_per_submission() -> None:
    names = {jobs.default_name("My Project", "0123456789abcdef") for _ in range(20)}
    assert len(names) == 20 and all(n.startswith("my-project-012345-") for n in names)
    for n in names:
        jobs.check_name(n)


CASES = yaml.safe_load(
    """
- {kw: {gpus: 9}, reason: "--gpus 9: no node type has more than 8 GPUs; ask for at most 8 per node and more --nodes"}
- {kw: {gpus: 8, region_pref: [lab]}, reason: "--gpus 8: no node type in lab has more than 4 GPUs; ask for at most 4 per node and more --nodes"}
- {kw: {region_pref: [eu-west-1]}, reason: "--region-pref: unknown region 'eu-west-1'; the cluster has us-west-2, us-east-1, us-east-2, lab"}
- {kw: {name: Resnet_1}, reason: "--name 'Resnet_1': Kubernetes needs lowercase letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. resnet-lr3)"}
- {kw: {gpus: 0}, reason: "--gpus 0: give the GPUs per node, at least 1"}
- {kw: {command: []}, reason: "no command: put it after `--`, e.g. lab submit --gpus 8 -- python train.py"}
- {kw: {gpu_type: H100}, reason: "--gpu-type H100: no such GPUs; the cluster has A100, A10G, T4, V100, titan-x-maxwell, titan-x-pascal"}
- {kw: {gpu_type: A100, spot: true}, reason: "--spot: no spot nodes with A100 GPUs; drop --spot"}
- {kw: {gpu_type: T4, gpus: 4}, reason: "--gpus 4: the chosen nodes (T4) have at most 1 GPUs; ask for at most 1 per node and more --nodes"}
- {kw: {env: [["1X", "y"]]}, reason: "--env 1X=...: '1X' is not an environment variable name (letters, digits, '_', '-', '.')"}
"""
)


@pytest.mark.parametrize("case", CASES, ids=[str(c["kw"]) for c in CASES])
def test_bad_requests_are_refused_with_one_line(case: dict) -> None:
    kw = dict(case["kw"])
    if "env" in kw:
        kw["env"] = tuple(tuple(x) for x in kw["env"])
    with pytest.raises(LabError) as e:
        jobs.check_request(_req(**kw), SETTINGS)
    assert e.value.lines == [case["reason"]]


def test_name_length_leaves_room_for_the_pod_hostname() -> None:
    jobs.check_name("a" * 61, nodes=2)  # a-...-1 is 63
    with pytest.raises(LabError, match="at most 61"):
        jobs.check_name("a" * 62, nodes=2)
    with pytest.raises(LabError, match="at most 60"):
        jobs.check_name("a" * 61, nodes=11)


def test_the_job_gets_its_own_venv_with_the_installs_its_readme_says() -> None:
    pod = _pod(install=(("-r", "requirements.txt"), ("-e", ".")), no_build_isolation=True)
    code, deps = pod["initContainers"]
    assert (code["name"], deps["name"]) == ("code", "deps")  # unpacked first, then installed next to it
    assert deps["command"][:2] == ["python3", "-c"] and "EnvBuilder" in deps["command"][2]
    env = {e["name"]: e["value"] for e in deps["env"]}
    assert json.loads(env["LAB_INSTALL"]) == [["-r", "requirements.txt"], ["-e", "."]]
    assert env["LAB_VENV"] == "/workspace/.lab/venv" and env["LAB_NO_BUILD_ISOLATION"] == "1"
    assert env["PIP_CACHE_DIR"] == "/home/researcher/.cache/pip"
    assert _env(pod)["LAB_VENV"] == "/workspace/.lab/venv" and "PYTHONPATH" not in _env(pod)
    main = pod["containers"][0]
    assert main["command"][:2] == ["python3", "-c"] and "LOG_DIR" in main["command"][2]
    assert main["command"][3:] == ["torchrun", "train.py"]


def test_keep_names_paths_next_to_the_code() -> None:
    env = _env(_pod(keep=("out", "runs/")))
    assert env["LAB_KEEP"] == "out:runs"
    for bad in ("/results/x", "../x", "a:b", "."):
        with pytest.raises(LabError, match=r"--keep .*: give a path inside the code's folder"):
            jobs.check_request(_req(keep=(bad,)), SETTINGS)
