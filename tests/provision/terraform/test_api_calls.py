"""The table of each script's AWS calls (provision/terraform/data/api_calls.yaml) against the scripts themselves:
every `aws <service> <command>` line of a shell script and every boto3 call of a Lambda is listed, as the action
IAM authorizes it (Service Authorization Reference), so the policy check cannot go stale; and the evaluator
decides the IAM User Guide's examples as IAM does."""

from __future__ import annotations

import re

import pytest
import yaml

from provision.terraform import iam_eval
from provision.terraform.api_calls import TABLE
from tests.support import ROOT, load_yaml

ENTRIES = load_yaml(TABLE)
SERVICES = {"ssm": "ssm", "ec2": "ec2", "elbv2": "elasticloadbalancing", "autoscaling": "autoscaling",
            "logs": "logs", "iam": "iam", "s3api": "s3"}  # fmt: skip


def _action(service: str, command: str) -> str:
    return f"{SERVICES[service]}:{''.join(w.capitalize() for w in re.split(r'[-_]', command))}"


def _found(path) -> set[str]:
    text = (ROOT / path).read_text()
    cli = {
        _action(s, c) for s, c in re.findall(r"\baws (ssm|ec2|elbv2|autoscaling|iam|s3api) ([a-z-]+)", text)
    }
    # `aws s3 cp - s3://...` (an upload from stdin) is PutObject; sts get-caller-identity needs no permission
    cli |= {"s3:PutObject" for _ in re.findall(r"\baws s3 cp [^\n]*- \"?s3://", text)}
    boto = {_action("ec2", c) for c in re.findall(r"\bec2\.([a-z_]+)\(", text)}
    return cli | boto


@pytest.mark.parametrize(
    "path",
    ["terraform/modules/node_join/templates/cluster-join.sh.tftpl", "terraform/modules/control_plane/scripts/bootstrap.sh",
     "terraform/modules/pod_gateway/failover/failover.py"],
)  # fmt: skip
def test_every_call_a_script_makes_is_in_the_table(path):
    listed = {c["action"] for e in ENTRIES if e["script"].split()[0] == path for c in e["calls"]}
    assert _found(path) and _found(path) <= listed, sorted(_found(path) - listed)


CASES = [
    # (policy statements, request, allowed)
    ([{"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::b/*"}],
     iam_eval.Request("s3:GetObject", "arn:aws:s3:::b/k"), True),
    ([{"Effect": "Allow", "Action": "s3:get*", "Resource": "arn:aws:s3:::b/*"}],
     iam_eval.Request("s3:GetObject", "arn:aws:s3:::B/k"), False),  # actions ignore case, ARNs do not
    ([{"Effect": "Allow", "Action": "*", "Resource": "*"}, {"Effect": "Deny", "Action": "s3:*", "Resource": "*"}],
     iam_eval.Request("s3:GetObject", "arn:aws:s3:::b/k"), False),  # an explicit deny wins
    ([{"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}], iam_eval.Request("iam:PassRole", "*"), False),
    ([{"Effect": "Allow", "Action": "ssm:GetParameter", "NotResource": "arn:aws:ssm:*:1:parameter/x"}],
     iam_eval.Request("ssm:GetParameter", "arn:aws:ssm:us-west-2:1:parameter/y"), True),
    ([{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*",
       "Condition": {"StringLike": {"kms:ViaService": "ssm.*.amazonaws.com"}}}],
     iam_eval.Request("kms:Decrypt", "k"), False),  # a missing key fails the condition
    ([{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*",
       "Condition": {"ForAnyValue:StringEquals": {"kms:ResourceAliases": ["alias/dlr"]}}}],
     iam_eval.Request("kms:Decrypt", "k", {"kms:ResourceAliases": ["alias/x", "alias/dlr"]}), True),
    ([{"Effect": "Deny", "Action": "s3:*", "Resource": "*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
      {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
     iam_eval.Request("s3:GetObject", "o", {"aws:SecureTransport": "true"}), True),
    ([{"Effect": "Allow", "Action": "ssm:TerminateSession", "Resource": "arn:aws:ssm:*:1:session/${aws:userid}-*"}],
     iam_eval.Request("ssm:TerminateSession", "arn:aws:ssm:us-west-2:1:session/AIDA1-abc", {"aws:userid": "AIDA1"}),
     True),  # a policy variable from the request
    ([{"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/node-keys/${aws:userid}"}],
     iam_eval.Request("s3:PutObject", "arn:aws:s3:::b/node-keys/AROA1:i-2", {"aws:userid": "AROA1:i-1"}),
     False),  # node identity (issue 36): an instance's session cannot put another instance's kubelet key
    ([{"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/node-keys/${aws:userid}"}],
     iam_eval.Request("s3:PutObject", "arn:aws:s3:::b/node-keys/AROA1:i-1", {"aws:userid": "AROA1:i-1"}), True),
    ([{"Effect": "Allow", "Action": "ec2:RunInstances", "Resource": "*",
       "Condition": {"StringNotEquals": {"aws:RequestTag/team": "x"}}}],
     iam_eval.Request("ec2:RunInstances", "*"), True),  # a negated operator holds for a missing key
]  # fmt: skip


@pytest.mark.parametrize("statements,request_,allowed", CASES)
def test_the_evaluator_decides_as_iam_does(statements, request_, allowed):
    assert iam_eval.evaluate([{"Statement": statements}], request_).allowed is allowed


TRUST_CASES = [
    # (trust statements, role's own identity statements, principal, allowed)
    ([{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"AWS": "arn:aws:iam::1:role/op"}}], [],
     "arn:aws:iam::111111111111:role/op", False),  # another account's role of the same name
    ([{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"AWS": "arn:aws:iam::111111111111:role/op"}}],
     [], "arn:aws:iam::111111111111:role/op", True),  # named: the trust policy alone decides
    ([{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"AWS": "arn:aws:iam::111111111111:root"}}],
     [], "arn:aws:iam::111111111111:role/node", False),  # the account: its identity policy must allow it too
    ([{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"AWS": "arn:aws:iam::111111111111:root"}}],
     [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}], "arn:aws:iam::111111111111:role/node", True),
    ([{"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Principal": {"Federated": "arn:x"}}],
     [{"Effect": "Allow", "Action": "sts:*", "Resource": "*"}], "arn:aws:iam::111111111111:role/node", False),
    ([{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"AWS": "arn:aws:iam::111111111111:role/ci"},
       "Condition": {"StringEquals": {"sts:ExternalId": "abcdefabcdef"}}}], [],
     "arn:aws:iam::111111111111:role/ci", False),  # CI without the ExternalId
]  # fmt: skip


@pytest.mark.parametrize("trust,identity,principal,allowed", TRUST_CASES)
def test_who_may_assume_a_role_is_decided_as_iam_does(trust, identity, principal, allowed):
    decision = iam_eval.can_assume({"Statement": trust}, "arn:aws:iam::111111111111:role/target", principal,
                                   [{"Statement": identity}])  # fmt: skip
    assert decision.allowed is allowed, decision.reason


def test_the_deny_side_reports_a_role_that_may_do_what_it_must_not(tmp_path):
    """A table whose `denied` call the role allows is one problem naming the call and why (issue 26)."""
    from clusterspec.loader import load_spec
    from provision.terraform import api_calls, provider_schema
    from provision.terraform.render import render
    from provision.terraform.schema_check import Checker

    schema_path = ROOT / ".cache/provider-aws/schema.json.gz"
    if not schema_path.exists():
        pytest.skip("the AWS provider schema is missing (make tools)")
    roots = [r.path for r in render(load_spec(), out_dir=tmp_path / "roots")]
    table = tmp_path / "calls.yaml"
    table.write_text(yaml.safe_dump([{
        "script": "a test", "root": "global", "module": "iam", "role": "node",
        "calls": [], "denied": [{"action": "ecr:BatchGetImage", "why": "a test",
                                 "resource": "arn:aws:ecr:us-west-2:{account}:repository/{cluster}/research"}]}]))  # fmt: skip
    problems, n = api_calls.check(Checker(provider_schema.load(schema_path), ROOT), ROOT / "terraform/modules",
                                  roots, ROOT, table)  # fmt: skip
    assert n == 1 and len(problems) == 1
    assert "must not be able to call ecr:BatchGetImage" in problems[0].message
