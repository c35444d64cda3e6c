"""What the AWS APIs reject at apply time and the provider does not check at plan time: character sets and
lengths of names, descriptions and tags. Each rule cites the API reference it follows.

A value is checked as far as it is known: the literal text of a string template, plus whatever the check
could resolve (module variables bound by a rendered root, locals). Unknown parts (``each.value``, resource
attributes) count as nothing for the length and pass the character set; a fully known value is checked whole.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

EC2_SG = "EC2 API CreateSecurityGroup (GroupName, GroupDescription)"
EC2_RULE = "EC2 API IpRange/IpPermission Description, AuthorizeSecurityGroupIngress"
# a-z, A-Z, 0-9, spaces, and ._-:/()#,@[]+=&;{}!$*
EC2_TEXT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-:/()#,@[]+=&;{}!$*")
IAM_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+=,.@-")
LAUNCH_TEMPLATE_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789().-/_")
S3_BUCKET = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
ELB_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
LOG_GROUP = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/#")
SSM_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/")
KMS_ALIAS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_-")
SPEC = {
    "ec2_text": "a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*",
    "iam_name": "letters, digits and _+=,.@-",
    "lt_name": "letters, digits and ().-/_",
    "s3_bucket": "lowercase letters, digits, dots and hyphens",
    "elb_name": "letters, digits and hyphens",
    "log_group": "letters, digits and ._-/#",
    "kms_alias": "letters, digits and /_-",
    "ssm_name": "letters, digits and _.-/",
}


@dataclass(frozen=True)
class Value:
    """A string as far as it is known: ``text`` holds the known characters, ``complete`` whether that is all."""

    text: str
    complete: bool


@dataclass(frozen=True)
class Rule:
    resource: str  # a type, or "*" for every resource with tags
    path: tuple[str, ...]  # argument, or block names then argument
    check: Callable[[Value], str | None]
    source: str  # the API reference the rule follows


def _chars(allowed: set[str], spec: str) -> Callable[[Value], str | None]:
    def check(v: Value) -> str | None:
        bad = sorted({c for c in v.text if c not in allowed})
        if bad:
            return f"contains {' '.join(repr(c) for c in bad)}; allowed are {spec}"
        return None

    return check


def _length(low: int, high: int) -> Callable[[Value], str | None]:
    def check(v: Value) -> str | None:
        if len(v.text) > high:
            return f"is {'at least ' if not v.complete else ''}{len(v.text)} characters long; at most {high}"
        if v.complete and len(v.text) < low:
            return f"is {len(v.text)} characters long; at least {low}"
        return None

    return check


def _all(*checks: Callable[[Value], str | None]) -> Callable[[Value], str | None]:
    def check(v: Value) -> str | None:
        for c in checks:
            problem = c(v)
            if problem:
                return problem
        return None

    return check


def _not_prefix(prefix: str, why: str) -> Callable[[Value], str | None]:
    def check(v: Value) -> str | None:
        # Only a value whose start is known: "${var.x}-y" has text "-y" and no known start.
        if v.complete and v.text.lower().startswith(prefix):
            return f"starts with {prefix!r}; {why}"
        return None

    return check


def _s3_bucket(v: Value) -> str | None:
    if ".." in v.text:
        return "contains '..'; bucket names have no two adjacent periods"
    if not v.complete:
        return None
    t = v.text
    if not (t[:1].isalnum() and t[-1:].isalnum()):
        return "must begin and end with a lowercase letter or a digit"
    try:
        ipaddress.IPv4Address(t)
        return "is formatted as an IP address; bucket names must not be"
    except ValueError:
        pass
    for prefix in ("xn--", "sthree-", "amzn-s3-demo-"):
        if t.startswith(prefix):
            return f"starts with {prefix!r}, a reserved prefix"
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"):
        if t.endswith(suffix):
            return f"ends with {suffix!r}, a reserved suffix"
    return None


def _ssm_levels(v: Value) -> str | None:
    levels = v.text.strip("/").count("/") + 1
    if v.complete and levels > 15:
        return f"has {levels} hierarchy levels; at most 15"
    return None


def _elb_name(v: Value) -> str | None:
    if v.complete and (v.text.startswith("-") or v.text.endswith("-")):
        return "must not begin or end with a hyphen"
    if v.complete and v.text.startswith("internal-"):
        return "must not begin with 'internal-'"
    return None


_ec2_description = _all(_chars(EC2_TEXT, SPEC["ec2_text"]), _length(0, 255))
_iam_role_name = _all(_chars(IAM_NAME, SPEC["iam_name"]), _length(1, 64))
_iam_policy_name = _all(_chars(IAM_NAME, SPEC["iam_name"]), _length(1, 128))
_iam_description = _length(0, 1000)
IAM_ROLE = "IAM API CreateRole (RoleName: 1-64 of [\\w+=,.@-]; Description: up to 1000)"
IAM_POLICY = "IAM API PutRolePolicy / CreatePolicy (PolicyName: 1-128 of [\\w+=,.@-])"

RULES: list[Rule] = [
    Rule(
        "aws_security_group",
        ("name",),
        _all(_chars(EC2_TEXT, SPEC["ec2_text"]), _length(1, 255), _not_prefix("sg-", "AWS reserves it")),
        EC2_SG,
    ),
    Rule("aws_security_group", ("description",), _ec2_description, EC2_SG),
    Rule("aws_security_group", ("ingress", "description"), _ec2_description, EC2_RULE),
    Rule("aws_security_group", ("egress", "description"), _ec2_description, EC2_RULE),
    Rule("aws_security_group_rule", ("description",), _ec2_description, EC2_RULE),
    Rule("aws_vpc_security_group_ingress_rule", ("description",), _ec2_description, EC2_RULE),
    Rule("aws_vpc_security_group_egress_rule", ("description",), _ec2_description, EC2_RULE),
    Rule(
        "aws_ec2_managed_prefix_list",
        ("name",),
        _all(_length(1, 255), _not_prefix("com.amazonaws", "AWS reserves it")),
        "EC2 API CreateManagedPrefixList (PrefixListName: up to 255, not com.amazonaws)",
    ),
    Rule(
        "aws_ec2_managed_prefix_list",
        ("entry", "description"),
        _ec2_description,
        "EC2 API AddPrefixListEntry",
    ),
    Rule("aws_iam_role", ("name",), _iam_role_name, IAM_ROLE),
    Rule(
        "aws_iam_role", ("name_prefix",), _all(_chars(IAM_NAME, SPEC["iam_name"]), _length(1, 38)), IAM_ROLE
    ),
    Rule("aws_iam_role", ("description",), _iam_description, IAM_ROLE),
    Rule("aws_iam_role_policy", ("name",), _iam_policy_name, IAM_POLICY),
    Rule("aws_iam_policy", ("name",), _iam_policy_name, IAM_POLICY),
    Rule("aws_iam_policy", ("description",), _iam_description, IAM_POLICY),
    Rule(
        "aws_iam_instance_profile",
        ("name",),
        _iam_policy_name,
        "IAM API CreateInstanceProfile (InstanceProfileName: 1-128 of [\\w+=,.@-])",
    ),
    Rule(
        "aws_s3_bucket",
        ("bucket",),
        _all(_chars(S3_BUCKET, SPEC["s3_bucket"]), _length(3, 63), _s3_bucket),
        "S3 general purpose bucket naming rules (Amazon S3 User Guide, bucketnamingrules)",
    ),
    Rule(
        "aws_autoscaling_group",
        ("name",),
        _length(1, 255),
        "Auto Scaling API CreateAutoScalingGroup (AutoScalingGroupName: 1-255)",
    ),
    Rule(
        "aws_launch_template",
        ("name",),
        _all(_chars(LAUNCH_TEMPLATE_NAME, SPEC["lt_name"]), _length(3, 128)),
        "EC2 API CreateLaunchTemplate (LaunchTemplateName: 3-128 of [a-zA-Z0-9().-/_])",
    ),
    Rule(
        "aws_lb",
        ("name",),
        _all(_chars(ELB_NAME, SPEC["elb_name"]), _length(1, 32), _elb_name),
        "ELB API CreateLoadBalancer (Name: up to 32 alphanumerics and hyphens)",
    ),
    Rule(
        "aws_lb_target_group",
        ("name",),
        _all(_chars(ELB_NAME, SPEC["elb_name"]), _length(1, 32), _elb_name),
        "ELB API CreateTargetGroup (Name: up to 32 alphanumerics and hyphens)",
    ),
    Rule(
        "aws_cloudwatch_log_group",
        ("name",),
        _all(_chars(LOG_GROUP, SPEC["log_group"]), _length(1, 512)),
        "CloudWatch Logs API CreateLogGroup (logGroupName: 1-512 of [.-_/#A-Za-z0-9])",
    ),
    Rule(
        "aws_ssm_parameter",
        ("name",),
        _all(
            _chars(SSM_NAME, SPEC["ssm_name"]),
            _length(1, 1011),
            _ssm_levels,
            _not_prefix("aws", "AWS reserves names starting with aws or ssm"),
            _not_prefix("ssm", "AWS reserves names starting with aws or ssm"),
            _not_prefix("/aws", "AWS reserves names starting with aws or ssm"),
            _not_prefix("/ssm", "AWS reserves names starting with aws or ssm"),
        ),
        "Systems Manager API PutParameter Name (a-zA-Z0-9_.-/, up to 1011 characters you create, 15 levels, not aws/ssm)",
    ),
    Rule(
        "aws_kms_alias",
        ("name",),
        _all(_chars(KMS_ALIAS, SPEC["kms_alias"]), _length(7, 256)),
        "KMS API CreateAlias (AliasName: alias/ then [a-zA-Z0-9/_-], up to 256)",
    ),
]

TAGS = "Tagging AWS resources (tag key 1-128 characters, value 0-256, the aws: prefix is reserved)"
_tag_key = _all(_length(1, 128), _not_prefix("aws:", "AWS reserves the aws: prefix"))
_tag_value = _length(0, 256)


def check_tag(key: Value, value: Value) -> list[str]:
    problems = []
    for what, v, check in (("key", key, _tag_key), ("value", value, _tag_value)):
        problem = check(v)
        if problem:
            text = v.text if len(v.text) <= 40 else v.text[:37] + "..."
            problems.append(f"tag {what} {text!r} {problem} ({TAGS})")
    return problems


def rules_for(resource_type: str) -> list[Rule]:
    return [r for r in RULES if r.resource == resource_type]
