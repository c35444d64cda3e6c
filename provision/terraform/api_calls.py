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
    m = re.fullmatch(r"\$\{var\.([\w-]+)\}", raw) if isinstance(raw, str) else None
    if m and isinstance(resolver.bindings.get(m[1]), list):  # a list the root binds (seams._bound)
        return [resolver.text(x) for x in resolver.bindings[m[1]]]
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
            for block, key in (("principals", "Principal"), ("not_principals", "NotPrincipal")):
                for p in stmt.get(block) or []:
                    s.setdefault(key, {}).setdefault(resolver.text(p["type"]), []).extend(
                        _strings(resolver, p["identifiers"])
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


def trust_documents(scope) -> dict[str, str]:
    """aws_iam_role name => the policy document of its trust policy (assume_role_policy)."""
    out = {}
    for _tf, rtype, name, body in scope.d.typed("resource"):
        if rtype == "aws_iam_role":
            m = POLICY_DOC.search(str(body.get("assume_role_policy", "")))
            if m:
                out[name] = m[1]
    return out


def _fill(text, values: dict):
    if isinstance(text, list):
        return [_fill(t, values) for t in text]
    if isinstance(text, dict):
        return {_fill(k, values): _fill(v, values) for k, v in text.items()}
    return str(text).format(**values)


def _root(entry_root: str, roots: list[Path], by_root: dict) -> Path | None:
    if entry_root != "primary":
        return by_root.get(entry_root)
    return next((r for r in roots if (r / "control_plane.tf").exists()
                 and 'module "control_plane"' in (r / "control_plane.tf").read_text()), None)  # fmt: skip


def _scope(checker: Checker, root: Path, module: str):
    from provision.terraform.seams import scopes

    return next((s for s in scopes(checker, root, {}) if s.context == f"module.{module}"), None)


def _policies(checker, entry, roots, by_root) -> tuple[list[dict], object] | None:
    """The role's identity policies: those attached in its module, plus what other modules attach (``also``)."""
    root = _root(entry["root"], roots, by_root)
    scope = root and _scope(checker, root, entry["module"])
    if scope is None:
        return None
    docs, attached = documents(scope), role_policies(scope)
    policies = [docs[d] for d in attached.get(entry["role"], []) if d in docs]
    for extra in entry.get("also", ()):
        other_root = _root(extra["root"], roots, by_root)
        other = other_root and _scope(checker, other_root, extra["module"])
        if other is not None:
            other_docs = documents(other)
            policies += [other_docs[d] for d in extra["documents"] if d in other_docs]
    return policies, scope


def check(
    checker: Checker, modules: Path, roots: list[Path], shown: Path, table: Path = TABLE
) -> tuple[list[Problem], int]:
    """Problems for every call its role refuses, every ``denied`` call it allows and every ``assume`` that its
    trust policy decides otherwise; and how many were evaluated."""
    entries = yaml.safe_load(table.read_text())
    by_root = {r.name: r for r in roots}
    problems, n = [], 0
    for entry in entries:
        found = _policies(checker, entry, roots, by_root)
        if found is None:
            continue
        policies, scope = found
        root = _root(entry["root"], roots, by_root)
        values = {"account": ACCOUNT, "cluster": scope.resolver.value(scope.resolver.bindings.get("cluster")).text,
                  "region": root.name, "primary": entry.get("primary_region", root.name)}  # fmt: skip
        if entry["root"] == "global":
            values["region"] = values["primary"] = _primary(roots)
        else:
            values["primary"] = _primary(roots)
        role = entry["role"]
        tf = next((f for f in scope.d.files if f.name == entry.get("file", "")), next(iter(scope.d.files)))
        line = Locator(tf).header("resource", "aws_iam_role", role)
        where = f"[{entry['root']} module.{entry['module']}]"

        def problem(text: str, tf=tf, line=line, role=role, where=where) -> None:
            problems.append(
                Problem(_show(tf, shown), line, f"aws_iam_role.{role}", "policy", f"{text} {where}")
            )

        for want, calls in ((True, entry.get("calls") or []), (False, entry.get("denied") or [])):
            for call in calls:
                n += 1
                request = iam_eval.Request(
                    call["action"], _fill(call["resource"], values), _fill(call.get("context", {}), values)
                )
                decision = iam_eval.evaluate(policies, request)
                if decision.allowed and not want:
                    problem(f"{entry['script']} must not be able to call {request.action} on {request.resource} "
                            f"({call.get('why', 'least privilege')}), which the role allows ({decision.reason}; "
                            "IAM User Guide, \"Policy evaluation logic\")")  # fmt: skip
                elif want and not decision.allowed:
                    problem(f"{entry['script']} calls {request.action} on {request.resource}, which the role "
                            f"refuses ({decision.reason}; IAM User Guide, \"Policy evaluation logic\")")  # fmt: skip
        trust_name = trust_documents(scope).get(role)
        trust = documents(scope).get(trust_name) if trust_name else None
        for a in entry.get("assumed_by") or []:
            if trust is None:
                break
            n += 1
            principal = _fill(a["principal"], values)
            identity = []
            if a.get("identity"):
                other = _policies(checker, {**a["identity"], "role": a["identity"]["role"]}, roots, by_root)
                identity = other[0] if other else []
            role_arn = _fill(
                f"arn:aws:iam::{{account}}:role/{{cluster}}-{a.get('name', role.replace('_', '-'))}", values
            )
            context = _fill(a.get("context", {}), values)
            if "Federated" in a:
                decision = iam_eval.evaluate([trust], iam_eval.Request(
                    a.get("action", "sts:AssumeRoleWithWebIdentity"), role_arn, context,
                    {"Federated": _fill(a["Federated"], values)}))  # fmt: skip
            else:
                decision = iam_eval.can_assume(trust, role_arn, principal, identity, context,
                                               a.get("action", "sts:AssumeRole"))  # fmt: skip
            if decision.allowed is not a["allowed"]:
                verb = "may" if decision.allowed else "may not"
                problem(f"{principal} {verb} assume {role_arn} ({decision.reason}; {a.get('why', 'the trust policy')}); "
                        f"expected {'allowed' if a['allowed'] else 'refused'}")  # fmt: skip
    return problems, n


def _primary(roots: list[Path]) -> str:
    for r in roots:
        cp = r / "control_plane.tf"
        if cp.exists() and 'module "control_plane"' in cp.read_text():
            return r.name
    return next((r.name for r in roots if r.name != "global"), "us-west-2")


__all__ = ["check", "documents", "role_policies", "_unquote"]
