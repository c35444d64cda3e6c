"""The tenancy objects as rendered (provision/tenancy.py): valid for the cluster's Kubernetes, the system
namespace's default-deny, the node names the CSR approver trusts, the quotas; what the real API server makes of
them is tests/provision/test_tenancy.py."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate

from clusterspec.loader import DEFAULT_SPEC, load_spec
from clusterspec.spec import Cluster
from provision import tenancy
from tests.support import load_yaml

SPEC = load_spec()


def test_gpu_quota_per_user_overrides_the_default():
    data = load_yaml(Path(DEFAULT_SPEC))
    data["users"][1]["gpu_quota"] = 64
    spec = Cluster.model_validate(data)
    assert (
        tenancy.gpu_quota(spec, "bob") == 64
        and tenancy.gpu_quota(spec, "alice") == spec.researchers.quota.gpus
    )


def test_the_cluster_objects_pass_strict_validation_and_the_gateway_identity_is_restricted():
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
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "kube-router")
    assert {v for r in role["rules"] for v in r["verbs"]} == {"get", "list", "watch"}  # read-only


def test_researcher_namespaces_enforce_restricted_with_their_owners_uid_and_cpu_memory_quotas():
    """Issue 36: `baseline` allowed any runAsUser, NET_RAW and inline nfs volumes; the namespace now enforces
    `restricted` and carries the uid the tenant policy holds its pods to; the quota bounds CPU and memory too."""
    ns, quota = tenancy.namespace_objects(SPEC, "bob")[:2]
    labels = ns["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels[tenancy.UID_LABEL] == "2002"
    hard = quota["spec"]["hard"]
    assert hard["requests.cpu"] == str(SPEC.researchers.quota.cpus)
    assert hard["requests.memory"] == f"{SPEC.researchers.quota.memory_gib}Gi"


def test_kube_system_admits_only_dns_the_webhook_and_monitoring():
    """Issue 36: system namespaces deny by default; what is let in, on which ports, from whom."""
    policies = {d["metadata"]["name"]: d["spec"] for d in tenancy.cluster_objects(SPEC)
                if d["kind"] == "NetworkPolicy" and d["metadata"]["namespace"] == "kube-system"}  # fmt: skip
    assert policies["default-deny-ingress"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert {p["port"] for r in policies["cluster-dns"]["ingress"] if "from" not in r for p in r["ports"]} == {
        53
    }
    assert policies["pod-identity-webhook"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 8443}]}]
    exporters = policies["certificate-exporters-from-monitoring"]["ingress"][0]
    assert exporters["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]


def test_the_csr_approver_trusts_the_lab_servers_that_join_and_no_other():
    cm = next(d for d in tenancy.cluster_objects(SPEC) if d["kind"] == "ConfigMap"
              and d["metadata"]["name"] == tenancy.NODE_NAMES_CONFIGMAP)  # fmt: skip
    joining = {s.name for site in SPEC.sites for s in site.servers if {"worker", "gateway"} & set(s.roles)}
    assert set(cm["data"]["names"].split()) == joining and "nas-01" not in joining
    assert cm["metadata"]["namespace"] == "kube-system"


def test_the_viewer_role_reads_no_log_and_no_configmap():
    role = tenancy.viewer_role()
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert "pods/log" not in resources and "configmaps" not in resources and "secrets" not in resources
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "list", "watch"}
