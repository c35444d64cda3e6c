"""Two classes of defect that the provider's schema passes and the apply rejects (found applying the roots with the
real provider against the embedded AWS, `make day-one`; issue 34):

- **AWS managed-policy ARNs** (``arn:<partition>:iam::aws:policy/<path><name>``) that do not exist: IAM answers the
  attach with NoSuchEntity. The ARN's path is part of it (AWSBackupServiceRolePolicyForBackup is under
  ``service-role/``, AWSBackupServiceRolePolicyForS3Backup is not). Checked against data/aws_managed_policies.yaml,
  a table of real ones with their paths (tests/provision/terraform/test_apply_rules.py holds it to moto's copy of
  AWS's list). ``for_each`` over a literal list, set or map is expanded for ``each.key``/``each.value``.
- **``aws_instance`` with ``ami = "resolve:ssm:..."`` and a ``root_block_device``**: the provider looks the
  unresolved string up with DescribeImages for the root device and fails with InvalidAMIID.Malformed
  (terraform-provider-aws issue 43488). Read the parameter with an ``aws_ssm_parameter`` data source instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import yaml

TABLE = Path(__file__).parent / "data" / "aws_managed_policies.yaml"
POLICY_ATTACHMENTS = (
    "aws_iam_role_policy_attachment",
    "aws_iam_user_policy_attachment",
    "aws_iam_group_policy_attachment",
    "aws_iam_policy_attachment",
)
_MANAGED = re.compile(r"arn:(?:\$\{[^}]*\}|aws[\w-]*):iam::aws:policy/([^\"\s]*)")
_LOCAL = re.compile(r"\blocal\.([A-Za-z_][\w-]*)")


def table(path: Path = TABLE) -> set[str]:
    """``<path><name>`` of every AWS managed policy the table knows (e.g. ``service-role/AWSBackupServiceRolePolicyForBackup``)."""
    return {str(p) for p in yaml.safe_load(path.read_text())["policies"]}


def _strip(text: str) -> str:
    return text.strip('"')


def _each(for_each: object) -> list[tuple[str, str]]:
    """(each.key, each.value) pairs of a literal for_each; [] when it is not literal."""
    if isinstance(for_each, dict):
        return [(_strip(str(k)), _strip(str(v))) for k, v in for_each.items() if k != "__is_block__"]
    if isinstance(for_each, list):
        return [(_strip(str(v)),) * 2 for v in for_each]
    if isinstance(for_each, str):
        m = re.fullmatch(r"\$\{(?:toset\()?(\[.*\])\)?\}", for_each.strip(), re.S)
        if m:
            try:
                items = json.loads(m[1])
            except ValueError:
                return []
            if all(isinstance(i, str) for i in items):
                return [(i, i) for i in items]
    return []


def policy_arns(body: dict) -> Iterator[str]:
    """The ``<path><name>`` parts of the AWS managed-policy ARNs a resource attaches, as far as they are known."""
    raw = [str(body.get("policy_arn", ""))]
    raw += (
        [str(v) for v in body.get("managed_policy_arns", []) or []]
        if isinstance(body.get("managed_policy_arns"), list)
        else [str(body.get("managed_policy_arns", ""))]
    )
    pairs = _each(body.get("for_each"))
    for text in raw:
        variants = [text]
        if "each." in text and pairs:
            variants = [text.replace("${each.key}", k).replace("${each.value}", v) for k, v in pairs]
        for v in variants:
            for m in _MANAGED.finditer(v):
                if "${" not in m[1]:
                    yield m[1]


def check_policies(
    resources: Iterator[tuple[str, str, str, dict]], known: set[str]
) -> Iterator[tuple[str, str, str]]:
    """(address, argument, message) for each managed-policy ARN not in KNOWN."""
    by_name = {k.rsplit("/", 1)[-1]: k for k in known}
    for _, rtype, name, body in resources:
        if rtype not in POLICY_ATTACHMENTS and rtype != "aws_iam_role":
            continue
        for arn_path in policy_arns(body):
            if arn_path in known:
                continue
            real = by_name.get(arn_path.rsplit("/", 1)[-1])
            hint = f"it is arn:aws:iam::aws:policy/{real}" if real else "no AWS managed policy has that name"
            yield (
                f"{rtype}.{name}",
                "policy_arn",
                f"arn:...:iam::aws:policy/{arn_path} does not exist (IAM NoSuchEntity); {hint}",
            )


def _text(value: object, local_values: dict[str, object], depth: int = 0) -> str:
    """A value's expression text with the locals it names spliced in (so `local.image_id` shows its template)."""
    text = str(value)
    if depth > 4:
        return text
    for name in set(_LOCAL.findall(text)):
        if name in local_values:
            text += " " + _text(local_values[name], local_values, depth + 1)
    return text


def check_resolve_ssm(
    resources: Iterator[tuple[str, str, str, dict]], local_values: dict[str, object]
) -> Iterator[tuple[str, str, str]]:
    for _, rtype, name, body in resources:
        if rtype != "aws_instance" or "root_block_device" not in body:
            continue
        if "resolve:ssm:" in _text(body.get("ami", ""), local_values):
            yield (
                f"{rtype}.{name}",
                "ami",
                'a "resolve:ssm:" image with a root_block_device fails at create (the provider calls '
                "DescribeImages with the unresolved string: InvalidAMIID.Malformed; terraform-provider-aws issue "
                '43488); read the parameter with a data "aws_ssm_parameter" and use its value',
            )
