"""IRSA in Terraform: the global root gives every researcher's namespace a role, each role trusts only its own
namespace's default ServiceAccount with the STS audience, and only the two OIDC documents are public."""

from tests.provision.terraform.tf_files import MODULES, parse


def _resources(path):
    return {
        (t, n): body for r in parse(path).get("resource", []) for t, v in r.items() for n, body in v.items()
    }


def _data(path):
    return {(t, n): body for r in parse(path).get("data", []) for t, v in r.items() for n, body in v.items()}


def test_global_root_maps_each_researcher_to_their_namespace(rendered, cluster):
    module = next(
        m["service_account_issuer"]
        for m in parse(rendered / "global" / "main.tf")["module"]
        if "service_account_issuer" in m
    )
    assert module["researchers"] == {u.name: f"u-{u.name}" for u in cluster.users}
    assert module["datasets_bucket_arn"] == '${module.buckets.bucket_arns["datasets"]}'
    assert module["results_bucket_arn"] == '${module.buckets.bucket_arns["results"]}'


def test_each_role_trusts_its_namespace_default_service_account_only():
    data = _data(MODULES / "service_account_issuer" / "main.tf")
    statement = data[("aws_iam_policy_document", "trust")]["statement"][0]
    assert statement["actions"] == ["sts:AssumeRoleWithWebIdentity"]
    conditions = {c["variable"]: (c["test"], c["values"]) for c in statement["condition"]}
    assert conditions == {
        "${local.issuer}:sub": ("StringEquals", ["system:serviceaccount:${each.value}:default"]),
        "${local.issuer}:aud": ("StringEquals", ["sts.amazonaws.com"]),
    }
    s3 = {s["sid"]: s for s in data[("aws_iam_policy_document", "s3")]["statement"]}
    assert s3["OwnResults"]["resources"] == ["${var.results_bucket_arn}/${each.key}/*"]
    assert s3["ReadDatasets"]["actions"] == ["s3:GetObject"]


def test_only_the_two_oidc_documents_are_public():
    data = _data(MODULES / "service_account_issuer" / "main.tf")
    public = [
        s
        for s in data[("aws_iam_policy_document", "issuer_bucket")]["statement"]
        if s.get("effect", "Allow") == "Allow"
    ]
    assert len(public) == 1 and public[0]["actions"] == ["s3:GetObject"]
    assert [r.rsplit("/", 2)[-2:] for r in public[0]["resources"]] == [
        [".well-known", "openid-configuration"],
        ["${aws_s3_bucket.issuer.arn}", "keys.json"],
    ]
    block = _resources(MODULES / "service_account_issuer" / "main.tf")[
        ("aws_s3_bucket_public_access_block", "issuer")
    ]
    assert block["block_public_acls"] is True and block["ignore_public_acls"] is True
