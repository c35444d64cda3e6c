"""Researchers' own AWS identities (issue 36; terraform/modules/researcher_access): only a certificate of the lab's
VPN CA with a listed researcher's CN assumes the laptop role, and with it a researcher reaches their own prefix
and nothing of anyone else's (tests/provision/data/laptop_access_cases.yaml), decided by the project's IAM
evaluator over the module's own policy documents with literal ARNs bound."""

from __future__ import annotations

import pytest

from provision.terraform import api_calls, iam_eval, seams
from provision.terraform.schema_check import Checker
from provision.terraform.settings import MODULES
from tests.support import ROOT, load_yaml

CASES = load_yaml(ROOT / "tests/provision/data/laptop_access_cases.yaml")
ANCHOR = "arn:aws:rolesanywhere:us-west-2:123456789012:trust-anchor/0123abcd-0000-0000-0000-000000000000"
BINDINGS = {
    "cluster": '"dlr"',
    "region": '"us-west-2"',
    "users": ['"alice"', '"bob"'],
    "results_bucket_arn": '"arn:aws:s3:::dlr-results-123456789012"',
    "datasets_bucket_arn": '"arn:aws:s3:::dlr-datasets-123456789012"',
    "s3_kms_key_arn": '"arn:aws:kms:us-west-2:123456789012:key/00000000-0000-0000-0000-000000000000"',
    "repository": '"dlr/research"',
}


@pytest.fixture(scope="module")
def docs():
    (scope,) = list(seams.scopes(Checker({}, ROOT), MODULES / "researcher_access", BINDINGS))[:1]
    found = api_calls.documents(scope)
    found["assume"] = _bind_anchor(found["assume"])
    return found


def _bind_anchor(doc):
    """The trust anchor's ARN is Terraform's to know; the evaluator sees `*`: name it."""
    for s in doc["Statement"]:
        for test in s.get("Condition", {}).values():
            if "aws:SourceArn" in test:
                test["aws:SourceArn"] = [ANCHOR]
    return doc


@pytest.mark.parametrize("case", CASES, ids=[f"{c['action']} {c['why']}" for c in CASES])
def test_a_laptop_reaches_its_own_prefix_only(docs, case):
    context = {"aws:PrincipalTag/x509Subject/CN": case["cn"], **case.get("context", {})}
    decided = iam_eval.evaluate([docs["laptop"]], iam_eval.Request(case["action"], case["resource"], context))
    assert decided.allowed == case["allowed"], f"{case['why']}: {decided.reason}"


@pytest.mark.parametrize(
    ("cn", "source", "allowed"),
    [("alice", ANCHOR, True), ("mallory", ANCHOR, False),
     ("alice", ANCHOR.replace("0123abcd", "9999ffff"), False)],  # another trust anchor: a site's CA
)  # fmt: skip
def test_only_a_listed_researchers_certificate_of_the_labs_ca_assumes_the_role(docs, cn, source, allowed):
    request = iam_eval.Request(
        "sts:AssumeRole", "arn:aws:iam::123456789012:role/dlr-researcher-laptop",
        {"aws:SourceArn": source, "aws:PrincipalTag/x509Subject/CN": cn}, {"Service": "rolesanywhere.amazonaws.com"},
    )  # fmt: skip
    assert iam_eval.evaluate([docs["assume"]], request).allowed == allowed
