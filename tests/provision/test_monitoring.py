"""Prometheus and Alertmanager as `invoke deploy-monitoring` renders them (provision/monitoring.py), held to
oracles we did not write: promtool checks the rules and the Prometheus configuration and runs every alert's
case (deploy/monitoring/alerts.rules.test.yaml), amtool checks Alertmanager's configuration, kubernetes-validate
checks every object against the API's schema, and every pod of the monitoring namespace meets Pod Security
`restricted`."""

from __future__ import annotations

import re
import shutil
import subprocess

import kubernetes_validate
import pytest
import yaml

from clusterspec.loader import load_spec
from provision import monitoring
from tests.support import ROOT, load_yaml, require_tool

TOPIC = "arn:aws:sns:us-west-2:123456789012:dlr-alerts"
ROLE = "arn:aws:iam::123456789012:role/dlr-alertmanager"


@pytest.fixture(scope="module")
def cluster():
    return load_spec()


@pytest.fixture(scope="module")
def objects(cluster):
    return monitoring.render(cluster, TOPIC, ROLE)


def _rules_dir(cluster, tmp_path):
    (tmp_path / "alerts.rules.yaml").write_text(monitoring.alert_rules(cluster))
    shutil.copy(ROOT / "deploy/monitoring/alerts.rules.test.yaml", tmp_path)
    return tmp_path


def test_promtool_accepts_the_rules_and_every_alert_fires_in_its_case(cluster, tmp_path):
    promtool = require_tool("promtool")
    folder = _rules_dir(cluster, tmp_path)
    check = subprocess.run(
        [promtool, "check", "rules", "alerts.rules.yaml"], cwd=folder, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    test = subprocess.run([promtool, "test", "rules", "alerts.rules.test.yaml"], cwd=folder, capture_output=True,
                          text=True)  # fmt: skip
    assert test.returncode == 0, test.stdout + test.stderr


def test_every_alert_of_the_file_has_a_firing_case(cluster):
    alerts = {
        r["alert"] for g in yaml.safe_load(monitoring.alert_rules(cluster))["groups"] for r in g["rules"]
    }
    cases = load_yaml(ROOT / "deploy/monitoring/alerts.rules.test.yaml")["tests"]
    firing = {t["alertname"] for c in cases for t in c["alert_rule_test"] if t["exp_alerts"]}
    assert alerts == firing, f"no firing case for {alerts - firing}; unknown {firing - alerts}"
    assert {"AutoscalerDown", "AutoscalerStuck", "NodeNotReady", "GpuXidCritical", "NodeJoinFailed",
            "CertificateExpiresSoon"} <= alerts  # fmt: skip


def test_the_warning_comes_from_the_spec(cluster):
    spec = cluster.model_copy(
        update={"operations": cluster.operations.model_copy(update={"certificate_warn_days": 45})}
    )
    text = monitoring.alert_rules(spec)
    assert "< 3888000" in text and "less than 45 days" in text


def test_the_configmap_carries_every_rule_file_and_promtool_accepts_the_configuration(
    cluster, objects, tmp_path
):
    promtool = require_tool("promtool")
    rules = next(
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "prometheus-rules"
    )
    assert set(rules["data"]) == {
        "alerts.rules.yaml",
        "cluster-autoscaler.rules.yaml",
        monitoring.ADMIN_RULES,
    }
    assert rules["data"]["alerts.rules.yaml"] == monitoring.alert_rules(cluster)
    (tmp_path / "rules").mkdir()
    for name, text in rules["data"].items():
        (tmp_path / "rules" / name).write_text(text)
    config = yaml.safe_load(
        monitoring.prometheus_config(objects).replace("/etc/prometheus/rules/", f"{tmp_path}/rules/")
    )
    # Debian's promtool is built without Kubernetes service discovery: each kubernetes_sd_configs block is checked
    # for its keys here and replaced by a file_sd_configs one, so that promtool checks everything else (the
    # relabelling of every job included)
    for job in config["scrape_configs"]:
        for sd in job.pop("kubernetes_sd_configs", []):
            assert sd["role"] in ("endpoints", "pod") and set(sd) <= {"role", "namespaces"}, sd
            job["file_sd_configs"] = [{"files": [str(tmp_path / "targets.json")]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    check = subprocess.run(
        [promtool, "check", "config", "prometheus.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 3 rules found" in check.stdout or check.stdout.count("SUCCESS") >= 4


def test_amtool_accepts_alertmanagers_configuration_which_sends_to_the_alert_topic(objects, tmp_path):
    amtool = require_tool("amtool")
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "alertmanager")
    (tmp_path / "alertmanager.yml").write_text(cm["data"]["alertmanager.yml"])
    check = subprocess.run(
        [amtool, "check-config", "alertmanager.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    config = yaml.safe_load(cm["data"]["alertmanager.yml"])
    (receiver,) = config["receivers"]
    assert (
        receiver["sns_configs"][0]["topic_arn"] == TOPIC and config["route"]["receiver"] == receiver["name"]
    )
    sa = next(o for o in objects if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "alertmanager")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == ROLE


def test_every_object_is_valid_for_the_clusters_kubernetes(cluster, objects):
    for doc in objects:
        kubernetes_validate.validate(doc, cluster.kubernetes.minor + ".0", strict=True)


def test_the_monitoring_namespace_enforces_restricted_and_its_pods_meet_it(objects):
    ns = next(o for o in objects if o["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    pods = [
        o
        for o in objects
        if o["kind"] in ("Deployment", "DaemonSet") and o["metadata"]["namespace"] == "monitoring"
    ]
    assert {p["metadata"]["name"] for p in pods} == {"prometheus", "alertmanager", "kube-state-metrics",
                                                    "x509-certificate-exporter"}  # fmt: skip
    for p in pods:
        spec = p["spec"]["template"]["spec"]
        assert not spec.get("hostNetwork") and not any("hostPath" in v for v in spec.get("volumes", []))
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
            assert not sc["capabilities"].get("add")


def test_the_host_exporters_read_certificates_and_never_a_key(objects):
    """Issue 36: the control plane's exporter (a third-party image) mounted /etc/kubernetes as root: every
    control-plane key, admin.conf and super-admin.conf. It mounts one folder of certificate copies now (the
    bootstrap's export_certificates), as nobody; the sites' exporter one certificate file."""
    hosts = {o["metadata"]["name"]: o for o in objects
             if o["kind"] == "DaemonSet" and o["metadata"]["namespace"] == "kube-system"}  # fmt: skip
    assert len(hosts) == 2
    for ds in hosts.values():
        spec = ds["spec"]["template"]["spec"]
        assert all(m["readOnly"] for c in spec["containers"] for m in c["volumeMounts"])
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsUser"] == 65534 and spec["securityContext"]["runAsNonRoot"]
        args = " ".join(spec["containers"][0]["args"])
        assert not any(word in args for word in (".key", ".conf", ".pem", "/etc/kubernetes"))
    cp = hosts["x509-certificate-exporter-control-plane"]["spec"]["template"]["spec"]
    assert [v["hostPath"]["path"] for v in cp["volumes"]] == [monitoring.EXPORTED_CERTIFICATES]
    assert cp["containers"][0]["args"][0] == "--watch-dir=/certificates"
    site = hosts["x509-certificate-exporter-sites"]["spec"]["template"]["spec"]
    assert [v["hostPath"] for v in site["volumes"]] == [
        {"path": "/etc/cluster-node/pki/server.crt", "type": "File"}
    ]


def test_prometheus_reads_no_secret(objects):
    for o in objects:
        if o["kind"] in ("ClusterRole", "Role"):
            for rule in o["rules"]:
                assert "secrets" not in rule["resources"], o["metadata"]["name"]
                assert set(rule["verbs"]) <= {"get", "list", "watch"}


def test_images_are_pinned():
    for image in monitoring.IMAGES.values():
        assert re.search(r":v?\d+\.\d+\.\d+$", image), image


def test_nothing_but_prometheus_reaches_alertmanager(objects):
    """Issue 36: the monitoring namespace denies by default; Alertmanager (its silences) answers Prometheus alone,
    operators reach it through `kubectl port-forward` (RBAC), no pod and no VPN laptop can."""
    policies = {o["metadata"]["name"]: o["spec"] for o in objects
                if o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] == "monitoring"}  # fmt: skip
    assert policies["default-deny-ingress"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    prometheus = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    for name, spec in policies.items():
        for rule in spec.get("ingress", []):
            assert rule["from"] == [prometheus], name
    am = [
        s
        for s in policies.values()
        if s["podSelector"].get("matchLabels") == {"app.kubernetes.io/name": "alertmanager"}
    ]
    assert am and am[0]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9093}]
