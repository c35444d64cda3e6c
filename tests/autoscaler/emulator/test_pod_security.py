"""Pod Security admission as kube-apiserver's PodSecurity plugin runs it (k8s.io/pod-security-admission), held to
kubectl: today's autoscaler Deployment (fixtures/autoscaler-manifests-acb6d0c.yaml, hostNetwork) is admitted with the
API server's warning and its ReplicaSet cannot create a pod, with the exact message; each policy check's reason and
detail (cases in pod_security_cases.yaml, from policy/check_*.go); namespace labels (enforce, warn, audit, versions)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from autoscaler.emulator import Emulator
from autoscaler.emulator.admission.podsecurity import evaluate, policy_from
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.support import load_yaml

HERE = Path(__file__).parent
FIXTURE = HERE.parent.parent / "demos" / "fixtures" / "autoscaler-manifests-acb6d0c.yaml"
CASES = load_yaml(HERE / "pod_security_cases.yaml")
KUBECTL = "/usr/bin/kubectl"
REFUSAL = (
    'violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), '
    'hostPort (container "autoscaler" uses hostPort 8085)'
)
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")


@pytest.fixture
def cluster(tmp_path):
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), [group(desired=2)])
    with Emulator(model, namespaces=()) as emu:
        kubeconfig = str(emu.write_kubeconfig(tmp_path / "admin.kubeconfig"))

        def kubectl(*args, input=None, check=True):
            out = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True,
                                 input=input, timeout=60)  # fmt: skip
            if check:
                assert out.returncode == 0, out.stderr
            return out

        yield emu, kubectl


def test_todays_autoscaler_deployment_is_refused_with_the_api_servers_message(cluster, tmp_path) -> None:
    emu, kubectl = cluster
    applied = kubectl("apply", "-f", str(FIXTURE))
    assert "deployment.apps/research-autoscaler created" in applied.stdout
    # the Deployment itself is admitted; Pod Security warns about its template (ValidatePodController)
    assert (
        f"Warning: would violate PodSecurity {REFUSAL.removeprefix('violates PodSecurity ')}"
        in applied.stderr
    )
    rs = json.loads(kubectl("get", "rs", "-n", "research-autoscaler", "-o", "json").stdout)["items"]
    (failure,) = [c for c in rs[0]["status"]["conditions"] if c["type"] == "ReplicaFailure"]
    assert failure["reason"] == "FailedCreate"
    name = failure["message"].split('"')[1]
    assert (
        name.startswith(rs[0]["metadata"]["name"] + "-") and len(name) == len(rs[0]["metadata"]["name"]) + 6
    )
    assert failure["message"] == f'pods "{name}" is forbidden: {REFUSAL}'
    events = kubectl("get", "events", "-n", "research-autoscaler", "--field-selector", "reason=FailedCreate",
                     "-o", "jsonpath={.items[*].message}").stdout  # fmt: skip
    assert f'Error creating: pods "{name}" is forbidden: {REFUSAL}' in events
    deploy = json.loads(kubectl("get", "deploy", "research-autoscaler", "-n", "research-autoscaler", "-o",
                                "json").stdout)  # fmt: skip
    conditions = {c["type"]: c for c in deploy["status"]["conditions"]}
    assert conditions["ReplicaFailure"]["message"].endswith(REFUSAL)
    assert conditions["Available"]["status"] == "False"
    assert kubectl("get", "pods", "-n", "research-autoscaler", "-o", "name").stdout == ""


def test_the_same_pod_created_directly_is_refused_by_kubectl(cluster, tmp_path) -> None:
    emu, kubectl = cluster
    docs = list(yaml.safe_load_all(FIXTURE.read_text()))
    kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump_all([d for d in docs if d["kind"] in ("Namespace", "ServiceAccount")]),
    )
    template = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "direct", "namespace": "research-autoscaler",
                                                          "labels": template["metadata"]["labels"]},
           "spec": template["spec"]}  # fmt: skip
    out = kubectl("apply", "-f", "-", input=yaml.safe_dump(pod), check=False)
    assert out.returncode == 1
    assert f'pods "direct" is forbidden: {REFUSAL}' in out.stderr
    assert "Error from server (Forbidden)" in out.stderr


def test_a_compliant_pod_is_admitted_and_warn_labels_warn(cluster) -> None:
    emu, kubectl = cluster
    kubectl("create", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "teams", "labels": {"pod-security.kubernetes.io/warn": "restricted"}}}))  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "teams"},
           "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}  # fmt: skip
    out = kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    assert (
        'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false'
        in out.stderr
    )
    assert "pod/p created" in out.stdout


def test_raising_a_namespaces_enforce_level_warns_about_its_pods(cluster) -> None:
    emu, kubectl = cluster
    kubectl("create", "namespace", "lab2", check=False)  # protobuf from kubectl's generator: refused (415)
    kubectl("apply", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": "lab2"}}))  # fmt: skip
    for n in ("a", "b"):
        kubectl("apply", "-f", "-", input=yaml.safe_dump({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "lab2"},
            "spec": {"hostNetwork": True, "containers": [{"name": "main", "image": "busybox:1.36"}]}}))  # fmt: skip
    out = kubectl("label", "namespace", "lab2", "pod-security.kubernetes.io/enforce=baseline")
    assert (
        'Warning: existing pods in namespace "lab2" violate the new PodSecurity enforce level "baseline:latest"'
        in out.stderr
    )
    assert "Warning: a (and 1 other pod): host namespaces" in out.stderr
    bad = kubectl(
        "label", "namespace", "lab2", "pod-security.kubernetes.io/enforce=strict", "--overwrite", check=False
    )
    assert bad.returncode == 1
    assert (
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, '
        "baseline, restricted"
    ) in bad.stderr


@pytest.mark.parametrize("case", CASES, ids=[c["check"] for c in CASES])
def test_policy_checks(case) -> None:
    """Each check of policy/check_*.go: its reason and detail on a pod that fails it, nothing on one that passes."""
    meta = case.get("metadata") or {}
    got = evaluate(case["level"], case.get("version", 35), meta, case["pod"])
    assert got == [tuple(r) for r in case["expect"]]


def test_policy_from_labels_follows_policy_to_evaluate() -> None:
    policy, errors = policy_from({"pod-security.kubernetes.io/enforce": "baseline"})
    assert policy.enforce == ("baseline", None) and policy.warn == ("baseline", None) and not errors
    policy, errors = policy_from({"pod-security.kubernetes.io/enforce": "restricted",
                                  "pod-security.kubernetes.io/enforce-version": "v1.24",
                                  "pod-security.kubernetes.io/warn": "privileged"})  # fmt: skip
    assert policy.enforce == ("restricted", 24) and policy.warn == ("privileged", None)
    policy, errors = policy_from({"pod-security.kubernetes.io/enforce": "nope"})
    assert policy.enforce[0] == "restricted", "a bad enforce level fails closed"
