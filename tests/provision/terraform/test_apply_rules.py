"""check-terraform's apply rules (provision/terraform/apply_rules.py): each fixture (data/apply_rule_cases.yaml)
draws exactly its problems; the repository's modules draw none; the managed-policy table agrees with moto's copy
of AWS's list of managed policies (the receiver the ARN crosses to: IAM answers NoSuchEntity otherwise)."""

from __future__ import annotations

import json

import pytest

from provision.terraform import apply_rules, schema_check
from provision.terraform.settings import MODULES
from tests.provision.terraform.conftest import DATA
from tests.support import ROOT, load_yaml

CASES = load_yaml(DATA / "apply_rule_cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_fixture_draws_its_problems(tmp_path, case):
    (tmp_path / "main.tf").write_text(case["main.tf"])
    problems = schema_check.check_apply_rules(schema_check.Directory.load(tmp_path, tmp_path), tmp_path)
    assert [(p.line, p.path) for p in problems] == [(w["line"], "main.tf") for w in case["expect"]], problems
    for p, want in zip(problems, case["expect"], strict=True):
        assert want["contains"] in str(p)


def test_the_modules_pass():
    problems = [
        p
        for module in sorted(MODULES.iterdir())
        if module.is_dir()
        for p in schema_check.check_apply_rules(schema_check.Directory.load(module, ROOT), ROOT)
    ]
    assert not problems, "\n".join(map(str, problems))


def test_the_table_names_real_policies_with_their_paths():
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    real = {
        f"{p['Path'].strip('/')}/{name}".lstrip("/")
        for name, p in json.loads(aws_managed_policies_data).items()
    }
    missing = sorted(apply_rules.table() - real)
    assert not missing, f"not AWS managed policies (name and path): {missing}"


def test_the_old_backup_arns_are_caught():
    """The defect issue 34 found: the S3 policies under service-role/, as terraform/modules/backup had them."""
    body = {
        "for_each": '${toset(["AWSBackupServiceRolePolicyForBackup", "AWSBackupServiceRolePolicyForS3Restore"])}',
        "policy_arn": '"arn:${local.p}:iam::aws:policy/service-role/${each.value}"',
    }
    found = list(
        apply_rules.check_policies(
            iter([(None, "aws_iam_role_policy_attachment", "b", body)]), apply_rules.table()
        )
    )
    assert len(found) == 1 and "AWSBackupServiceRolePolicyForS3Restore" in found[0][2]
