"""An IAM policy evaluator for identity-based policies in one account, after the IAM User Guide's "Policy
evaluation logic" (determining whether a request is allowed or denied within an account) and its "IAM JSON policy
elements reference":

- a request is denied when any statement that applies to it has ``Effect: Deny``; otherwise allowed when any
  applicable statement allows it; otherwise implicitly denied;
- a statement applies when its ``Action`` (or not its ``NotAction``) matches the action, case-insensitively with
  ``*`` and ``?``; its ``Resource`` (or not its ``NotResource``) matches the resource ARN, case-sensitively with
  ``*`` and ``?`` (policy variables such as ``${aws:userid}`` are taken from the request context); and every
  condition holds: every key of every operator block, any of its values (OR), for the key's values in the request
  context (``ForAnyValue:``/``ForAllValues:`` for multivalued keys; ``...IfExists`` holds when the key is absent;
  a missing key fails a condition, except with the negated operators and ``Null``).

Resource-based policies and role trust policies name a ``Principal`` (or ``NotPrincipal``): such a statement
applies only to a request from a matching principal (``{"AWS": arn}``, ``{"Service": ...}``, ``{"Federated":
...}``; ``*`` matches anyone; an account's ``arn:aws:iam::<account>:root`` matches every principal of that
account, which the account's own identity policies must then also allow: :func:`can_assume`).

Documents are the JSON shape (``Statement``, ``Effect``, ``Action``...). Used by `invoke check-terraform`
(provision/terraform/api_calls.py) with the policies Terraform renders, for what each script must be allowed and,
since issue 26, for what each role must be refused (another namespace's data, the autoscaler's role, the join
parameters' writes) and who may assume which role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NEGATED = {"StringNotEquals", "StringNotEqualsIgnoreCase", "StringNotLike", "ArnNotEquals", "ArnNotLike",
           "NotIpAddress", "NumericNotEquals", "DateNotEquals"}  # fmt: skip


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: dict = field(default_factory=dict)  # condition key => value or list of values
    principal: dict | None = None  # {"AWS": arn} | {"Service": name} | {"Federated": arn}; None: not compared


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # "allowed by <sid>", "explicitly denied by <sid>", "no statement allows it"


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _glob(pattern: str, value: str, case: bool) -> bool:
    if not case:
        pattern, value = pattern.lower(), value.lower()
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.S) is not None


def _substitute(pattern: str, context: dict) -> str:
    def value(m: re.Match) -> str:
        v = context.get(m[1])
        return str(_as_list(v)[0]) if v is not None else m[0]

    return re.sub(r"\$\{([\w:./-]+)\}", value, pattern)


def _one(op: str, want: str, have, context: dict) -> bool:
    want = _substitute(str(want), context)
    have = str(have)
    if op in ("StringEquals", "StringNotEquals", "ArnEquals", "ArnNotEquals"):
        return have == want
    if op in ("StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase"):
        return have.lower() == want.lower()
    if op in ("StringLike", "StringNotLike", "ArnLike", "ArnNotLike"):
        return _glob(want, have, case=True)
    if op == "Bool":
        return have.lower() == want.lower()
    if op.startswith("Numeric"):
        a, b = float(have), float(want)
        return {"NumericEquals": a == b, "NumericNotEquals": a == b, "NumericLessThan": a < b,
                "NumericLessThanEquals": a <= b, "NumericGreaterThan": a > b,
                "NumericGreaterThanEquals": a >= b}[op]  # fmt: skip
    raise ValueError(f"condition operator {op} is not evaluated here")


def condition_holds(operator: str, key: str, wanted, context: dict) -> bool:
    qualifier, _, op = operator.rpartition(":")
    if_exists = op.endswith("IfExists")
    op = op.removesuffix("IfExists")
    present = key in context
    if op == "Null":
        return (not present) == (str(_as_list(wanted)[0]).lower() == "true")
    if not present:
        if if_exists or qualifier == "ForAllValues":
            return True
        return op in NEGATED
    haves = _as_list(context[key])
    wants = _as_list(wanted)
    negated = op in NEGATED
    if qualifier == "ForAllValues":
        match = all(any(_one(op, w, h, context) for w in wants) for h in haves)
        return not match if negated else match
    if qualifier == "ForAnyValue":
        match = any(_one(op, w, h, context) for w in wants for h in haves)
        return not match if negated else match
    match = any(_one(op, w, h, context) for w in wants for h in haves)
    return not match if negated else match


def _account_of(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[4] if len(parts) > 5 and parts[2] in ("iam", "sts") else None


def principal_matches(principals, request_principal: dict | None) -> bool:
    """A statement's Principal block against the request's principal (IAM JSON policy elements: Principal)."""
    if request_principal is None:
        return True
    if principals == "*":
        return True
    for kind, who in request_principal.items():
        for p in _as_list((principals or {}).get(kind)):
            if p == "*" or p == who:
                return True
            if (
                kind == "AWS"
                and re.fullmatch(r"arn:aws[\w-]*:iam::\d{12}:root", p)
                and _account_of(who) == _account_of(p)
            ):
                return True
            if kind == "AWS" and re.fullmatch(r"\d{12}", p) and _account_of(who) == p:
                return True
    return False


def statement_applies(stmt: dict, request: Request) -> bool:
    if "Principal" in stmt and not principal_matches(stmt["Principal"], request.principal):
        return False
    if "NotPrincipal" in stmt and principal_matches(stmt["NotPrincipal"], request.principal):
        return False
    if "Action" in stmt:
        if not any(_glob(a, request.action, case=False) for a in _as_list(stmt["Action"])):
            return False
    elif "NotAction" in stmt:
        if any(_glob(a, request.action, case=False) for a in _as_list(stmt["NotAction"])):
            return False
    else:
        return False
    ctx = request.context
    if "Resource" in stmt:
        if not any(
            _glob(_substitute(r, ctx), request.resource, case=True) for r in _as_list(stmt["Resource"])
        ):
            return False
    elif "NotResource" in stmt and any(
        _glob(_substitute(r, ctx), request.resource, case=True) for r in _as_list(stmt["NotResource"])
    ):
        return False
    for operator, keys in (stmt.get("Condition") or {}).items():
        for key, wanted in keys.items():
            if not condition_holds(operator, key, wanted, ctx):
                return False
    return True


def evaluate(documents: list[dict], request: Request) -> Decision:
    """The decision for REQUEST under the identity-based policies DOCUMENTS (all of one principal)."""
    allowed_by = None
    for doc in documents:
        for i, stmt in enumerate(_as_list(doc.get("Statement"))):
            if not statement_applies(stmt, request):
                continue
            sid = stmt.get("Sid") or f"statement {i}"
            if stmt.get("Effect") == "Deny":
                return Decision(False, f"explicitly denied by {sid}")
            allowed_by = allowed_by or sid
    if allowed_by:
        return Decision(True, f"allowed by {allowed_by}")
    return Decision(False, "no statement allows it")


def can_assume(trust: dict, role_arn: str, principal_arn: str, identity: list[dict], context: dict | None = None,
               action: str = "sts:AssumeRole") -> Decision:  # fmt: skip
    """Whether the role PRINCIPAL_ARN (with identity policies IDENTITY) may assume ROLE_ARN, whose trust policy is
    TRUST (IAM User Guide, "Policy evaluation logic", cross-principal: a trust policy naming the principal itself
    suffices; naming only its account needs the principal's identity policy to allow the call too)."""
    ctx = {"aws:PrincipalArn": principal_arn, **(context or {})}
    request = Request(action, role_arn, ctx, {"AWS": principal_arn})
    decided = evaluate([trust], request)
    if not decided.allowed:
        return decided
    named = any(principal_arn in _as_list((s.get("Principal") or {}).get("AWS"))
                for s in _as_list(trust.get("Statement")) if s.get("Effect", "Allow") == "Allow")  # fmt: skip
    if named:
        return decided
    own = evaluate(identity, Request(action, role_arn, ctx))
    return own if not own.allowed else decided
