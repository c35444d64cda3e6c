"""The operations Terraform (issue 29, docs/operations.md) as the roots render it from cluster.yaml: the etcd
snapshots' bucket wired into the control plane's user data, AWS Backup with a copy in the second region, the
alarms of every region on its own topic, the budget from the spec; and every IAM policy it adds through
parliament (duo-labs' linter built from AWS's Service Authorization Reference)."""

from __future__ import annotations

import json
import re

import pytest

from tests.provision.terraform.tf_files import MODULES, module_calls, outputs, parse

REF = re.compile(r"\$\{[^}]*\}")


def _providers(path) -> list[dict]:
    return [
        body for entry in parse(path).get("provider", []) for kind, body in entry.items() if kind == "aws"
    ]


def test_the_primary_region_backs_etcd_up_and_copies_it_to_the_second_region(cluster, rendered):
    primary = rendered / cluster.primary_region
    calls = module_calls(primary)
    etcd = calls["etcd_backup"]
    assert etcd["kms_key_arn"] == "${module.kms.key_arn}", "encrypted with the cluster key"
    assert etcd["keep_days"] == cluster.operations.backups.keep_days
    wired = calls["control_plane"]["etcd_backup"]
    assert wired["bucket"] == "${module.etcd_backup.bucket}"
    assert wired["every_h"] == cluster.operations.backups.etcd_every_h
    backup = calls["backup"]
    assert backup["copy_region"] == cluster.backup_copy_region == cluster.spill_over_order[1]
    assert backup["resources"] == ["${module.etcd_backup.bucket_arn}", "${module.efs.arn}"]
    assert "aws.backup_copy" in str(backup["providers"]), "the copy vault is made in the copy region"
    copy = next(p for p in _providers(primary / "operations.tf") if p.get("alias") == "backup_copy")
    assert copy["region"] == cluster.backup_copy_region
    assert "etcd_backup_bucket" in outputs(primary) and "backup_copy_vault_arn" in outputs(primary)


def test_every_region_alarms_on_its_own_topic_and_the_primary_on_its_api_lambda_etcd_and_certificates(
    cluster, rendered
):
    for region in cluster.spill_over_order:
        calls = module_calls(rendered / region)
        alarms = calls["alarms"]
        assert alarms["vpn_connections"] == "${module.vpn.connection_ids}"
        if region == cluster.primary_region:
            assert alarms["topic_arn"] == "${data.terraform_remote_state.global.outputs.alerts_topic_arn}"
            assert alarms["api"]["members"] == cluster.kubernetes.control_plane.count
            assert alarms["failover_function"] == "${module.pod_gateway.failover_function}"
            assert alarms["etcd"]["every_h"] == cluster.operations.backups.etcd_every_h
            assert set(alarms["certificates"]) == {"client-vpn-server", "client-vpn-client-ca"}
            assert "alert_topic" not in calls
        else:
            assert alarms["topic_arn"] == "${module.alert_topic.topic_arn}"
            topic = calls["alert_topic"]
            assert topic["name"] == f"{cluster.name}-{region}-alerts"
            assert topic["email"] == cluster.operations.alerts.email and topic["webhook"] == ""
            assert "api" not in alarms and "etcd" not in alarms


def test_the_global_root_has_the_primary_topic_alertmanagers_role_and_the_budget(cluster, rendered):
    calls = module_calls(rendered / "global")
    topic = calls["alert_topic"]
    assert topic["name"] == f"{cluster.name}-alerts" and topic["email"] == cluster.operations.alerts.email
    assert topic["alertmanager"]["namespace"] == "monitoring"
    assert topic["alertmanager"]["service_account"] == "alertmanager"
    budget = calls["budget"]
    spec = cluster.operations.budget
    assert budget["monthly_usd"] == spec.monthly_usd
    assert budget["forecast_alert_percent"] == spec.forecast_alert_percent
    assert budget["actual_alert_percent"] == spec.actual_alert_percent
    assert budget["topic_arn"] == "${module.alert_topic.topic_arn}"
    assert {"alerts_topic_arn", "alertmanager_role_arn", "budget_name"} <= set(outputs(rendered / "global"))


# Example values for the references in the policies (their shapes as AWS has them).
EXAMPLES = {
    "aws_s3_bucket.this.arn": "arn:aws:s3:::dlr-etcd-backups-123456789012",
    "var.kms_key_arn": "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "var.cluster_kms_key_arn": "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "aws_kms_key.this.arn": "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ac",
    "aws_sns_topic.this.arn": "arn:aws:sns:us-west-2:123456789012:dlr-alerts",
    "var.alertmanager.provider_arn": "arn:aws:iam::123456789012:oidc-provider/dlr-oidc.s3.amazonaws.com",
    "var.alertmanager.issuer": "dlr-oidc.s3.us-west-2.amazonaws.com",
}


def _fill(text: str) -> str:
    def one(m: re.Match) -> str:
        inner = m[0][2:-1]
        for ref, value in EXAMPLES.items():
            inner = inner.replace(ref, value)
        return {"data.aws_partition.this.partition": "aws", "data.aws_caller_identity.this.account_id": "123456789012",
                "var.region": "us-west-2", "local.parameter": "/dlr/etcd/last-backup", "local.namespace": "dlr/etcd",
                "local.p": "aws", "local.account": "123456789012"}.get(inner, inner)  # fmt: skip

    return REF.sub(one, text)


def _policy(module: str, name: str, resource_policy: bool) -> str:
    data = {
        n: b
        for e in parse(MODULES / module / "main.tf").get("data", [])
        for t in e.values()
        for n, b in t.items()
    }
    out = []
    for s in data[name]["statement"]:

        def vals(v):
            items = v if isinstance(v, list) else [v]
            filled = [_fill(x) for x in items]
            return filled[0] if len(filled) == 1 else filled

        st = {
            "Effect": s.get("effect", "Allow"),
            "Action": vals(s["actions"]),
            "Resource": vals(s["resources"]),
        }
        if "sid" in s:
            st["Sid"] = s["sid"]
        if resource_policy or "principals" in s:
            st["Principal"] = {p["type"]: vals(p["identifiers"]) for p in s["principals"]}
            if st["Principal"] == {"*": "*"}:  # how the provider writes type "*"
                st["Principal"] = "*"
        for c in s.get("condition", []):
            st.setdefault("Condition", {}).setdefault(c["test"], {})[_fill(c["variable"])] = vals(c["values"])
        out.append(st)
    return json.dumps({"Version": "2012-10-17", "Statement": out})


@pytest.mark.parametrize(
    "module,name,resource_policy",
    [
        ("etcd_backup", "control_plane", False),
        ("etcd_backup", "bucket", True),
        ("alert_topic", "alertmanager", False),
        ("alert_topic", "topic", True),
        ("backup", "cluster_key", False),
    ],
)
def test_policies_pass_parliament(module, name, resource_policy):
    from parliament import analyze_policy_string

    doc = _policy(module, name, resource_policy)
    findings = analyze_policy_string(doc, include_community_auditors=False).findings
    assert [(f.issue, f.detail) for f in findings] == [], doc
