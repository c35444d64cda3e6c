"""Pod Security: every workload the project deploys into a namespace that enforces "restricted" is admitted at
that level (tests/provision/pod_security.py: the checks of k8s.io/pod-security-admission), and the autoscaler
gets its AWS credentials through its ServiceAccount (IRSA) instead of the host's network and IMDS."""

from __future__ import annotations

import pytest

from clusterspec.loader import load_spec
from clusterspec.names import AUTOSCALER_IRSA_SUBJECT, AUTOSCALER_NAMESPACE, AUTOSCALER_SERVICE_ACCOUNT
from provision import addons, deploy, irsa, scheduler
from tests.provision.pod_security import enforced_levels, pod_spec, violations
from tests.provision.terraform.tf_files import MODULES, parse
from tests.support import ROOT, load_yaml

ARN = "arn:aws:iam::123456789012:role/dlr-autoscaler"
CASES = load_yaml(ROOT / "tests/provision/data/pod_security_cases.yaml")


@pytest.fixture(scope="module")
def spec():
    return load_spec()


def _everything(spec) -> list[dict]:
    """What the project's deploy commands apply (autoscaler, gang scheduler, GPU add-ons, pod identity webhook)."""
    return [
        *deploy.render(spec, ARN),
        *scheduler.render_manifests(spec),
        *addons.render(spec),
        *irsa.webhook_manifests(spec, b"-----BEGIN CERTIFICATE-----\n"),
    ]


def test_every_workload_in_a_restricted_namespace_is_admitted(spec):
    docs = _everything(spec)
    levels = enforced_levels(docs)
    restricted = {ns for ns, level in levels.items() if level == "restricted"}
    assert {AUTOSCALER_NAMESPACE, scheduler.GANG_NAMESPACE} <= restricted
    checked = []
    for doc in docs:
        spec_ = pod_spec(doc)
        if spec_ is None or doc["metadata"].get("namespace") not in restricted:
            continue
        assert violations(spec_) == [], (
            f"{doc['kind']} {doc['metadata']['namespace']}/{doc['metadata']['name']}"
        )
        checked.append(doc["metadata"]["name"])
    assert {deploy.NAME, scheduler.GANG_SCHEDULER} <= set(checked)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_checker_refuses_what_the_admission_refuses(case):
    assert violations(case["spec"]) == case["violations"]


def test_the_autoscaler_assumes_its_role_with_its_service_account_token(spec):
    docs = {d["kind"]: d for d in deploy.render(spec, ARN)}
    dep = docs["Deployment"]
    pod = dep["spec"]["template"]["spec"]
    assert not pod.get("hostNetwork") and "dnsPolicy" not in pod
    assert (
        pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"] == AUTOSCALER_SERVICE_ACCOUNT
    )
    assert dep["metadata"]["namespace"] == AUTOSCALER_NAMESPACE
    [container] = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    (token,) = (
        v["projected"]["sources"][0]["serviceAccountToken"]
        for v in pod["volumes"]
        if v["name"] == "aws-token"
    )
    assert env["AWS_ROLE_ARN"] == ARN
    assert env["AWS_WEB_IDENTITY_TOKEN_FILE"] == f"{mounts['aws-token']}/{token['path']}"
    assert token["audience"] == "sts.amazonaws.com"
    assert "AWS_CONFIG_FILE" not in env
    # the role trusts exactly this ServiceAccount through the cluster's OIDC provider, and nothing else
    data = {
        n: b
        for e in parse(MODULES / "iam" / "autoscaler.tf")["data"]
        for t in e.values()
        for n, b in t.items()
    }
    (stmt,) = data["autoscaler_assume"]["statement"]
    assert stmt["actions"] == ["sts:AssumeRoleWithWebIdentity"]
    assert stmt["principals"] == [{"type": "Federated", "identifiers": ["${var.oidc_provider_arn}"]}]
    conds = {c["variable"]: c["values"] for c in stmt["condition"]}
    assert conds == {
        "${var.oidc_issuer}:sub": ["${var.autoscaler_subject}"],
        "${var.oidc_issuer}:aud": [token["audience"]],
    }
    assert (
        f"system:serviceaccount:{AUTOSCALER_NAMESPACE}:{AUTOSCALER_SERVICE_ACCOUNT}"
        == AUTOSCALER_IRSA_SUBJECT
    )


def test_no_instance_role_may_assume_the_autoscaler_role():
    text = (MODULES / "iam" / "control_plane.tf").read_text()
    assert "aws_iam_role.autoscaler" not in text and "sts:AssumeRole" not in text


def test_the_global_root_gives_the_iam_module_the_issuer_and_the_subject(rendered):
    calls = {n: b for m in parse(rendered / "global" / "main.tf")["module"] for n, b in m.items()}
    iam = calls["iam"]
    assert iam["oidc_provider_arn"] == "${module.service_account_issuer.provider_arn}"
    assert iam["oidc_issuer"] == "${module.service_account_issuer.issuer}"
    assert iam["autoscaler_subject"] == AUTOSCALER_IRSA_SUBJECT
    assert "service_account_issuer" in calls  # always: the autoscaler needs it, researchers or not


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, spec):
    from provision.terraform.render import render

    out = tmp_path_factory.mktemp("tf")
    render(spec, regions=[spec.primary_region], out_dir=out)
    return out
