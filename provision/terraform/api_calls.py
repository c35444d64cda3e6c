"""Rule ``api_calls`` of `invoke check-terraform`: every AWS API call a script, user data or Lambda function makes
is allowed by the role that runs it. The calls are a table (provision/terraform/data/api_calls.yaml: per script,
the role it runs as and each call with its resource ARN and request context); the roles' policies are the ones the
rendered roots declare (``aws_iam_policy_document`` data blocks, attached with ``aws_iam_role_policy`` or
``aws_iam_policy`` + ``aws_iam_role_policy_attachment``), evaluated by provision/terraform/iam_eval.py.

Values the check cannot know (another resource's id, a for expression) become ``*`` in the rendered policy: a
resource the policy names only through them is taken as allowed, never as refused.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from provision.terraform import iam_eval
from provision.terraform.schema_check import Checker, Locator, Problem, Resolver, _show, _unquote
from provision.terraform.schema_check import Value as _Value

TABLE = Path(__file__).with_name("data") / "api_calls.yaml"
ACCOUNT = "123456789012"
POLICY_DOC = re.compile(r"data\.aws_iam_policy_document\.([\w-]+)\.(?:json|minified_json)")


class PolicyResolver(Resolver):
    """The check's Resolver, knowing the partition and the account (placeholders) and rendering what it cannot
    know as ``*``."""

    def expression(self, expr: str, depth: int) -> _Value:
        if re.fullmatch(r"data\.aws_partition\.[\w-]+\.partition", expr) or expr == "local.p":
            return _Value("aws", True)
        if re.fullmatch(r"data\.aws_caller_identity\.[\w-]+\.account_id", expr) or expr == "local.account":
            return _Value(ACCOUNT, True)
        v = super().expression(expr, depth)
        return v if v.complete else _Value("*", True)

    def text(self, raw) -> str:
        if (
            isinstance(raw, str)
            and raw.startswith("${")
            and raw.endswith("}")
            and not re.fullmatch(r"\$\{(var|local|data)\.[\w.-]+\}", raw)
        ):
            return "*"
        return self.value(raw).text


def _strings(resolver: PolicyResolver, raw) -> list[str]:
    if isinstance(raw, list):
        return [resolver.text(x) for x in raw]
    return [resolver.text(raw)]


def documents(scope) -> dict[str, dict]:
    """data.aws_iam_policy_document name => its JSON document, in the scope's bindings."""
    resolver = PolicyResolver(scope.resolver.bindings, scope.resolver.local_values)
    out = {}
    for _tf, rtype, name, body in scope.d.typed("data"):
        if rtype != "aws_iam_policy_document":
            continue
        statements = []
        for stmt in body.get("statement") or []:
            s: dict = {"Effect": resolver.text(stmt.get("effect", '"Allow"'))}
            if stmt.get("sid"):
                s["Sid"] = resolver.text(stmt["sid"])
            for hcl, key in (("actions", "Action"), ("not_actions", "NotAction"), ("resources", "Resource"),
                             ("not_resources", "NotResource")):  # fmt: skip
                if hcl in stmt:
                    s[key] = _strings(resolver, stmt[hcl])
            for cond in stmt.get("condition") or []:
                test, variable = resolver.text(cond["test"]), resolver.text(cond["variable"])
                s.setdefault("Condition", {}).setdefault(test, {})[variable] = _strings(
                    resolver, cond["values"]
                )
            statements.append(s)
        out[name] = {"Version": "2012-10-17", "Statement": statements}
    return out


def _ref(expr, kind: str) -> str | None:
    m = re.search(rf"\b{kind}\.([\w-]+)\.", str(expr))
    return m[1] if m else None


def role_policies(scope) -> dict[str, list[str]]:
    """aws_iam_role name => the policy documents attached to it in this scope."""
    docs_of_policy = {}
    for _tf, rtype, name, body in scope.d.typed("resource"):
        if rtype == "aws_iam_policy":
            m = POLICY_DOC.search(str(body.get("policy", "")))
            if m:
                docs_of_policy[name] = m[1]
    out: dict[str, list[str]] = {}
    for _tf, rtype, _name, body in scope.d.typed("resource"):
        if rtype == "aws_iam_role_policy":
            role, m = _ref(body.get("role"), "aws_iam_role"), POLICY_DOC.search(str(body.get("policy", "")))
            if role and m:
                out.setdefault(role, []).append(m[1])
        elif rtype == "aws_iam_role_policy_attachment":
            each = body.get("for_each") if isinstance(body.get("for_each"), dict) else {None: None}
            for value in each.values():
                role = _ref(
                    value if "each.value" in str(body.get("role")) else body.get("role"), "aws_iam_role"
                )
                policy = _ref(value if "each.value" in str(body.get("policy_arn")) else body.get("policy_arn"),
                              "aws_iam_policy")  # fmt: skip
                if role and policy in docs_of_policy:
                    out.setdefault(role, []).append(docs_of_policy[policy])
    return out


def _fill(text, values: dict):
    if isinstance(text, list):
        return [_fill(t, values) for t in text]
    if isinstance(text, dict):
        return {_fill(k, values): _fill(v, values) for k, v in text.items()}
    return str(text).format(**values)


def check(
    checker: Checker, modules: Path, roots: list[Path], shown: Path, table: Path = TABLE
) -> tuple[list[Problem], int]:
    """Problems for every call its role refuses, and how many calls were evaluated."""
    from provision.terraform.seams import scopes

    entries = yaml.safe_load(table.read_text())
    by_root = {r.name: r for r in roots}
    problems, n = [], 0
    for entry in entries:
        root = by_root.get(entry["root"]) if entry["root"] != "primary" else next(
            (r for r in roots if (r / "control_plane.tf").exists() and "module \"control_plane\"" in (r / "control_plane.tf").read_text()), None)  # fmt: skip
        if root is None:
            continue
        scope = next((s for s in scopes(checker, root, {}) if s.context == f"module.{entry['module']}"), None)
        if scope is None:
            continue
        docs, attached = documents(scope), role_policies(scope)
        role = entry["role"]
        policies = [docs[d] for d in attached.get(role, []) if d in docs]
        values = {"account": ACCOUNT, "cluster": scope.resolver.value(scope.resolver.bindings.get("cluster")).text,
                  "region": root.name, "primary": entry.get("primary_region", root.name)}  # fmt: skip
        if entry["root"] == "global":
            values["region"] = values["primary"] = _primary(roots)
        else:
            values["primary"] = _primary(roots)
        for call in entry["calls"]:
            n += 1
            request = iam_eval.Request(
                call["action"], _fill(call["resource"], values), _fill(call.get("context", {}), values)
            )
            decision = iam_eval.evaluate(policies, request)
            if not decision.allowed:
                tf = next(
                    (f for f in scope.d.files if f.name == entry.get("file", "")), next(iter(scope.d.files))
                )
                line = Locator(tf).header("resource", "aws_iam_role", role)
                problems.append(Problem(_show(tf, shown), line, f"aws_iam_role.{role}", "policy",
                                        f"{entry['script']} calls {request.action} on {request.resource}, which the "
                                        f"role refuses ({decision.reason}; IAM User Guide, \"Policy evaluation "
                                        f"logic\") [{entry['root']} module.{entry['module']}]"))  # fmt: skip
    return problems, n


def _primary(roots: list[Path]) -> str:
    for r in roots:
        cp = r / "control_plane.tf"
        if cp.exists() and 'module "control_plane"' in cp.read_text():
            return r.name
    return next((r.name for r in roots if r.name != "global"), "us-west-2")


__all__ = ["check", "documents", "role_policies", "_unquote"]
