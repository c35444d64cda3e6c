"""Researchers as tenants (issue 26): in the local stack, with the emulator enforcing Pod Security, RBAC,
ResourceQuota and ValidatingAdmissionPolicy, a researcher's own kubeconfig (from `invoke add-user`) is refused
what would let a pod escape its namespace, each with the API server's message, as kubectl prints it; the
researcher's Job pods (what `lab submit` creates) are admitted. Cases in data/tenant_escapes.yaml."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from autoscaler.model.spec_groups import groups_from_spec
from clusterspec.loader import DEFAULT_SPEC, load_spec
from labctl import jobs as lab_jobs
from provision import tenancy, users
from tests.support import ROOT, load_yaml, require_tool

SPEC = load_spec()
CASES = load_yaml(ROOT / "tests/provision/data/tenant_escapes.yaml")
CONTROL_PLANE = "ip-10-0-0-10.us-west-2.compute.internal"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The emulator with a kubeadm control-plane node, the tenancy objects applied by the admin with kubectl,
    and alice added by `invoke add-user` (her kubeconfig from the CSR API)."""
    kubectl = require_tool("kubectl", "/usr/bin/kubectl")
    tmp = tmp_path_factory.mktemp("tenancy")
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), groups_from_spec(load_yaml(Path(DEFAULT_SPEC))))
    with model.lock:
        model.register_control_plane(CONTROL_PLANE, "10.0.0.10", "us-west-2", "us-west-2a",
                                     {"cpu": "4", "memory": "16Gi", "pods": "110"})  # fmt: skip
    with Emulator(model, namespaces=()) as emu:
        emu.install_podgroup_crd()
        admin = str(emu.write_kubeconfig(tmp / "admin"))
        path = tenancy.write(SPEC, tmp / "tenancy.yaml")
        done = subprocess.run([kubectl, "--kubeconfig", admin, "apply", "-f", str(path)], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        added = users.add_user(SPEC, "alice", admin, tmp / "home", timeout_s=5)

        def run(*args, input=None):
            return subprocess.run([kubectl, "--kubeconfig", str(added.kubeconfig), *args], capture_output=True,
                                  text=True, input=input, timeout=60)  # fmt: skip

        yield emu, run


def _pod(name: str, spec_patch: dict) -> dict:
    spec = {"containers": [{"name": "main", "image": "python:3.11", "command": ["sleep", "1"]}]}
    for key, value in spec_patch.items():
        if key == "container":
            spec["containers"][0].update(value)
        else:
            spec[key] = value
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_researcher_is_refused_each_escape_with_the_api_servers_message(stack, case):
    emu, kubectl = stack
    pod = _pod(case["name"], yaml.safe_load(case["pod"]))
    out = kubectl("create", "-f", "-", input=yaml.safe_dump(pod))
    assert out.returncode == 1, out.stdout
    last = out.stderr.strip().splitlines()[
        -1
    ]  # after any "Warning: would violate PodSecurity restricted" line
    assert last == f'Error from server ({case["reason"]}): error when creating "STDIN": {case["message"]}'
    with emu.model.lock:
        assert emu.model.store.find("pods", "u-alice", case["name"]) is None


def test_the_same_pods_pass_in_a_namespace_that_is_no_tenants(stack, tmp_path):
    """The refusals come from the tenant namespace's labels and the policy's binding, not from the pods alone:
    the admin (system:masters) may still run a pod tolerating the control-plane taint in kube-system."""
    emu, _ = stack
    pod = _pod("cp-tolerating", {"tolerations": [{"key": tenancy.CONTROL_PLANE_TAINT, "operator": "Exists",
                                                  "effect": "NoSchedule"}]})  # fmt: skip
    pod["metadata"]["namespace"] = "kube-system"
    emu.apply(pod)


def test_the_researchers_own_job_is_admitted_with_only_restricted_warnings_it_accepts(stack, tmp_path):
    """What `lab submit --gpus 8 --nodes 2` creates (the Job, its headless Service, its rendezvous
    NetworkPolicy) is admitted under baseline with alice's own credentials, and its pods are created by the Job
    controller; the quota counts their GPUs."""
    emu, kubectl = stack
    from tests.labctl.settings import SETTINGS

    req = lab_jobs.JobRequest(name="resnet", namespace="u-alice", image=SETTINGS.standard_image,
                              command=["torchrun", "train.py"], gpus=8, nodes=2, gang=False, user="alice",
                              code_url="s3://dlr-results-123456789012/alice/.lab/code/x.tar.gz",
                              code_sha256="ab" * 32, code_tag="ab" * 8)  # fmt: skip
    docs = lab_jobs.manifests(req, SETTINGS)  # exactly what `lab submit` creates, in its order
    assert [d["kind"] for d in docs] == ["Job", "Service", "NetworkPolicy"]
    out = kubectl("create", "-f", "-", input=yaml.safe_dump_all(docs))
    assert out.returncode == 0, out.stderr
    with emu.model.lock:
        emu.model.advance(1)
        pods = emu.model.store.list("pods", "u-alice")
        events = [e.get("message") for e in emu.model.store.list("events", "u-alice")]
        quota = emu.model.store.get("resourcequotas", "u-alice", "researcher")
    assert len(pods) == 2, events
    assert quota["status"]["used"]["requests.nvidia.com/gpu"] == "16"


def test_add_user_makes_the_tenant_objects(stack):
    emu, kubectl = stack
    with emu.model.lock:
        ns = emu.model.store.get("namespaces", None, "u-alice")
        quota = emu.model.store.get("resourcequotas", "u-alice", "researcher")
        policies = {p["metadata"]["name"] for p in emu.model.store.list("networkpolicies", "u-alice")}
    labels = ns["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["pod-security.kubernetes.io/enforce-version"] == f"v{SPEC.kubernetes.minor}"
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == str(SPEC.researchers.quota.gpus)
    assert {"default-deny-ingress", "from-laptops"} <= policies
    # alice cannot loosen her own namespace: the labels and the quota are the admin's
    out = kubectl(
        "label", "namespace", "u-alice", "pod-security.kubernetes.io/enforce=privileged", "--overwrite"
    )
    assert out.returncode == 1 and "forbidden" in out.stderr
    out = kubectl("delete", "resourcequota", "researcher")
    assert out.returncode == 1 and "forbidden" in out.stderr


def test_gpu_quota_per_user_overrides_the_default():
    data = load_yaml(Path(DEFAULT_SPEC))
    data["users"][1]["gpu_quota"] = 64
    from clusterspec.spec import Cluster

    spec = Cluster.model_validate(data)
    assert (
        tenancy.gpu_quota(spec, "bob") == 64
        and tenancy.gpu_quota(spec, "alice") == spec.researchers.quota.gpus
    )


def test_the_cluster_objects_pass_strict_validation_and_the_gateway_identity_is_restricted():
    import kubernetes_validate

    docs = tenancy.cluster_objects(SPEC)
    for doc in docs:
        kubernetes_validate.validate(doc, SPEC.kubernetes.minor + ".0", strict=True)
    for user in SPEC.users:
        for doc in tenancy.namespace_objects(SPEC, user.name):
            kubernetes_validate.validate(doc, SPEC.kubernetes.minor + ".0", strict=True)
    ns = next(d for d in docs if d["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    router = next(d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "kube-router")
    assert router["spec"]["template"]["spec"]["containers"][0]["args"][:3] == [
        "--run-router=false", "--run-firewall=true", "--run-service-proxy=false"]  # fmt: skip
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    assert {v for r in role["rules"] for v in r["verbs"]} == {"get", "list", "watch"}  # read-only
