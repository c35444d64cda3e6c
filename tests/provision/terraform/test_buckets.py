"""S3: the access-log bucket can actually receive server access logs. Its object ownership is
BucketOwnerEnforced (ACLs disabled), so S3 delivers logs only when the bucket policy grants the logging service
principal s3:PutObject, and only into a bucket whose default encryption is SSE-S3."""

import re

from tests.provision.terraform.tf_files import MODULES, parse

MAIN = MODULES / "buckets" / "main.tf"
TARGET = re.compile(r'aws_s3_bucket\.this\["([\w-]+)"\]')


def _resource(rtype: str) -> dict:
    for entry in parse(MAIN).get("resource", []):
        if rtype in entry:
            return entry[rtype]["this"]
    raise AssertionError(f"buckets has no {rtype}.this")


def _log_target() -> str:
    match = TARGET.search(_resource("aws_s3_bucket_logging")["target_bucket"])
    assert match, "the logging target is not one of the module's buckets"
    return match.group(1)


def _policy_statements() -> list[dict]:
    """Static and dynamic statements of the policy document the bucket policy uses."""
    name = re.search(r"aws_iam_policy_document\.(\w+)", _resource("aws_s3_bucket_policy")["policy"]).group(1)
    for entry in parse(MAIN).get("data", []):
        document = entry.get("aws_iam_policy_document", {}).get(name)
        if document is not None:
            statements = list(document.get("statement", []))
            for dynamic in document.get("dynamic", []):
                for block in dynamic.get("statement", {}).get("content", []):
                    statements.append(block | {"for_each": dynamic["statement"]["for_each"]})
            return statements
    raise AssertionError(f"no policy document {name}")


def test_object_ownership_is_bucket_owner_enforced():
    rule = _resource("aws_s3_bucket_ownership_controls")["rule"][0]
    assert rule["object_ownership"] == "BucketOwnerEnforced"


def test_the_log_bucket_policy_grants_the_logging_service_principal():
    target = _log_target()
    grants = [
        s
        for s in _policy_statements()
        if s.get("effect", "Allow") == "Allow"
        and "s3:PutObject" in s.get("actions", [])
        and any(
            p["type"] == "Service" and "logging.s3.amazonaws.com" in p["identifiers"]
            for p in s.get("principals", [])
        )
    ]
    assert grants, "no bucket policy statement lets logging.s3.amazonaws.com write the access logs"
    for grant in grants:
        # Only the log bucket gets the grant, and only for this account's buckets.
        assert target in grant.get("for_each", ""), grant
        variables = {c["variable"] for c in grant.get("condition", [])}
        assert {"aws:SourceArn", "aws:SourceAccount"} <= variables, grant


def test_the_log_bucket_is_not_sse_kms():
    target = _log_target()
    default = _resource("aws_s3_bucket_server_side_encryption_configuration")["rule"][0][
        "apply_server_side_encryption_by_default"
    ][0]
    algorithm = default["sse_algorithm"]
    assert re.search(rf'each\.key == "{target}" \? "AES256"', algorithm), (
        f"the log bucket {target} must use SSE-S3 (AES256) for server access log delivery: {algorithm}"
    )
