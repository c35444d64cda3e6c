"""RBAC authorization over the stored Roles, ClusterRoles and bindings, as kube-apiserver's authorizer chain with
kubeadm's ``--authorization-mode=Node,RBAC`` decides (plugin/pkg/auth/authorizer/rbac ``RBACAuthorizer``; the
privileged-group authorizer in front of it lets ``system:masters`` do anything).

- a request's attributes (verb, API group, resource and subresource, namespace, name; or a non-resource path)
  are matched against every rule of the roles bound to the user, their groups or their ServiceAccount:
  ClusterRoleBindings anywhere, RoleBindings in the request's namespace (rbac/v1 helpers ``VerbMatches``,
  ``APIGroupMatches``, ``ResourceMatches`` with ``*`` and ``*/<subresource>``, ``ResourceNameMatches``,
  ``NonResourceURLMatches`` with a trailing ``*``);
- refusals are 403 with the API server's message (pkg/endpoints/handlers/responsewriters ``forbiddenMessage``):
  ``pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"``,
  with ``: RBAC: role.rbac.authorization.k8s.io "x" not found`` when a binding names a role that does not exist;
- escalation prevention (pkg/registry/rbac ``EscalationAllowed``, ``ConfirmNoEscalation``, ``BindingAuthorized``):
  writing a Role or ClusterRole needs the rules it grants, or ``escalate``; a binding needs the role's rules, or
  ``bind`` on that role.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from autoscaler.emulator.auth.user import MASTERS, UserInfo, split_service_account
from autoscaler.emulator.errors import Forbidden
from autoscaler.model.pods import selector_matches

RBAC_GROUP = "rbac.authorization.k8s.io"
POLICY_FILE = Path(__file__).with_name("bootstrap_policy.yaml")


@dataclass(frozen=True)
class Attributes:
    user: UserInfo
    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    is_resource: bool = True

    @classmethod
    def of(cls, user: UserInfo, info) -> Attributes:
        if not info.is_resource:
            return cls(user, info.verb, path=info.path, is_resource=False)
        return cls(user, info.verb, info.group, info.resource, info.subresource, info.namespace, info.name)


def _matches(rule: dict, a: Attributes) -> bool:
    verbs = rule.get("verbs") or ()
    if "*" not in verbs and a.verb not in verbs:
        return False
    if not a.is_resource:
        for url in rule.get("nonResourceURLs") or ():
            if url == "*" or url == a.path or (url.endswith("*") and a.path.startswith(url[:-1])):
                return True
        return False
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and a.group not in groups:
        return False
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    resources = rule.get("resources") or ()
    if not any(r in ("*", combined) or (a.subresource and r == f"*/{a.subresource}") for r in resources):
        return False
    names = rule.get("resourceNames") or ()
    return not names or a.name in names


def _subject_applies(subject: dict, user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa = split_service_account(user.name)
        return sa is not None and sa == (subject.get("namespace") or binding_namespace, name)
    return False


def expand_rule(r: dict) -> dict:
    """A rule of the bootstrap policy file (compact keys) as an rbac/v1 PolicyRule."""
    if "u" in r:
        return {"nonResourceURLs": list(r["u"]), "verbs": list(r["v"])}
    rule = {"apiGroups": list(r["g"]), "resources": list(r["r"]), "verbs": list(r["v"])}
    if r.get("n"):
        rule["resourceNames"] = list(r["n"])
    return rule


@functools.lru_cache(maxsize=1)
def bootstrap_policy() -> dict:
    return yaml.safe_load(POLICY_FILE.read_text())


def bootstrap_objects() -> list[tuple[str, dict]]:
    """(store kind, object) of every role and binding kube-apiserver creates at start."""
    data = bootstrap_policy()
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    annotations = {"rbac.authorization.kubernetes.io/autoupdate": "true"}

    def meta(name: str, ns: str | None = None, extra: dict | None = None) -> dict:
        m = {"name": name, "labels": {**labels, **(extra or {})}, "annotations": dict(annotations)}
        if ns:
            m["namespace"] = ns
        return m

    out = []
    for name, role in data["clusterRoles"].items():
        obj = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": meta(name, None, role.get("labels")),
               "rules": [expand_rule(r) for r in role.get("rules") or ()]}  # fmt: skip
        if role.get("aggregate"):
            obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": role["aggregate"]}]}
        out.append(("clusterroles", obj))
    for name, b in data["clusterRoleBindings"].items():
        out.append(("clusterrolebindings", {
            "apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": meta(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": b["role"]},
            "subjects": [{**s, "apiGroup": RBAC_GROUP} for s in b["subjects"]]}))  # fmt: skip
    for ns, roles in data["roles"].items():
        for name, role in roles.items():
            out.append(("roles", {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": meta(name, ns),
                                  "rules": [expand_rule(r) for r in role["rules"]]}))  # fmt: skip
    for ns, bindings in data["roleBindings"].items():
        for name, b in bindings.items():
            out.append(("rolebindings", {
                "apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding", "metadata": meta(name, ns),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": b["role"]},
                "subjects": [{**s, "apiGroup": RBAC_GROUP} for s in b["subjects"]]}))  # fmt: skip
    return out


def aggregated_rules(clusterroles: list[dict], role: dict) -> list[dict] | None:
    """The rules the ClusterRole aggregation controller writes into an aggregated ClusterRole (None: not one):
    every rule of the ClusterRoles its selectors match, in name order, without duplicates."""
    selectors = ((role.get("aggregationRule") or {}).get("clusterRoleSelectors")) or None
    if selectors is None:
        return None
    rules: list[dict] = []
    for other in sorted(clusterroles, key=lambda r: r["metadata"]["name"]):
        if other is role or other["metadata"]["name"] == role["metadata"]["name"]:
            continue
        labels = other["metadata"].get("labels") or {}
        if any(selector_matches(s, labels) for s in selectors):
            for rule in other.get("rules") or ():
                if rule not in rules:
                    rules.append(rule)
    return rules


class Authorizer:
    def __init__(self, model) -> None:
        self.model = model

    # --- rules -------------------------------------------------------------------------------------------
    def _role_rules(self, ref: dict, namespace: str, errors: list[str]) -> list[dict]:
        store = self.model.store
        if ref.get("kind") == "ClusterRole":
            role = store.find("clusterroles", None, ref.get("name", ""))
            if role is None:
                errors.append(f'clusterrole.rbac.authorization.k8s.io "{ref.get("name")}" not found')
                return []
        else:
            role = store.find("roles", namespace, ref.get("name", ""))
            if role is None:
                errors.append(f'role.rbac.authorization.k8s.io "{ref.get("name")}" not found')
                return []
        return list(role.get("rules") or ())

    def visit(self, user: UserInfo, namespace: str, errors: list[str] | None = None):
        """Every rule that applies to ``user`` in ``namespace`` ("" : cluster-wide only), as (binding, rule)."""
        errors = [] if errors is None else errors
        store = self.model.store
        for b in store.list("clusterrolebindings"):
            if any(_subject_applies(s, user, "") for s in b.get("subjects") or ()):
                for rule in self._role_rules(b.get("roleRef") or {}, "", errors):
                    yield b, rule
        if namespace:
            for b in store.list("rolebindings", namespace):
                if any(_subject_applies(s, user, namespace) for s in b.get("subjects") or ()):
                    for rule in self._role_rules(b.get("roleRef") or {}, namespace, errors):
                        yield b, rule

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[dict], list[str]]:
        errors: list[str] = []
        rules = [rule for _, rule in self.visit(user, namespace, errors)]
        return rules, errors

    # --- decisions ---------------------------------------------------------------------------------------
    def allows(self, a: Attributes) -> tuple[bool, str]:
        if MASTERS in a.user.groups:
            return True, ""
        errors: list[str] = []
        for _, rule in self.visit(a.user, a.namespace if a.is_resource else "", errors):
            if _matches(rule, a):
                return True, ""
        return False, ("RBAC: " + ", ".join(errors)) if errors else ""

    def authorize(self, user: UserInfo, info) -> tuple[bool, str]:
        return self.allows(Attributes.of(user, info))

    def forbidden(self, user: UserInfo, info, reason: str = "") -> Forbidden:
        return forbidden_error(Attributes.of(user, info), reason)

    # --- escalation --------------------------------------------------------------------------------------
    def confirm_no_escalation(self, user: UserInfo, namespace: str, rules: list[dict]) -> list[dict]:
        """The rules of ``rules`` the user does not hold themselves (validation.ConfirmNoEscalation)."""
        if MASTERS in user.groups:
            return []
        own, _ = self.rules_for(user, namespace)
        missing = []
        for rule in rules:
            for piece in _break_down(rule):
                if not any(_covers(o, piece) for o in own) and piece not in missing:
                    missing.append(piece)
        return missing


def _break_down(rule: dict) -> list[dict]:
    """A rule as single (group, resource, verb[, name]) rules (validation.BreakdownRule)."""
    out = []
    if rule.get("nonResourceURLs"):
        for url in rule["nonResourceURLs"]:
            for verb in rule.get("verbs") or ():
                out.append({"nonResourceURLs": [url], "verbs": [verb]})
        return out
    for g in rule.get("apiGroups") or ():
        for r in rule.get("resources") or ():
            for v in rule.get("verbs") or ():
                names = rule.get("resourceNames") or []
                if names:
                    for n in names:
                        out.append({"apiGroups": [g], "resources": [r], "verbs": [v], "resourceNames": [n]})
                else:
                    out.append({"apiGroups": [g], "resources": [r], "verbs": [v]})
    return out


def _has(values, wanted: str) -> bool:
    return "*" in (values or ()) or wanted in (values or ())


def _covers(owner: dict, piece: dict) -> bool:
    """Whether one of the owner's rules covers a single-value rule (validation.ruleCovers)."""
    if not _has(owner.get("verbs"), piece["verbs"][0]):
        return False
    if piece.get("nonResourceURLs"):
        url = piece["nonResourceURLs"][0]
        return any(u == "*" or u == url or (u.endswith("*") and url.startswith(u[:-1]))
                   for u in owner.get("nonResourceURLs") or ())  # fmt: skip
    if not _has(owner.get("apiGroups"), piece["apiGroups"][0]):
        return False
    r = piece["resources"][0]
    resources = owner.get("resources") or ()
    sub = r.split("/", 1)[1] if "/" in r else ""
    if not ("*" in resources or r in resources or (sub and f"*/{sub}" in resources)):
        return False
    names = owner.get("resourceNames") or ()
    return not names or bool(piece.get("resourceNames")) and piece["resourceNames"][0] in names


def compact(rule: dict) -> str:
    """A rule as the API server prints it in escalation errors (rbacv1helpers.CompactString)."""

    def q(values) -> str:
        return "[" + " ".join(f'"{v}"' for v in values) + "]"

    parts = []
    if rule.get("apiGroups") is not None:
        parts.append(f"APIGroups:{q(rule['apiGroups'])}")
    if rule.get("resources"):
        parts.append(f"Resources:{q(rule['resources'])}")
    if rule.get("nonResourceURLs"):
        parts.append(f"NonResourceURLs:{q(rule['nonResourceURLs'])}")
    if rule.get("resourceNames"):
        parts.append(f"ResourceNames:{q(rule['resourceNames'])}")
    parts.append(f"Verbs:{q(rule.get('verbs') or [])}")
    return "{" + ", ".join(parts) + "}"


def forbidden_error(a: Attributes, reason: str = "") -> Forbidden:
    if not a.is_resource:
        message = f'User "{a.user.name}" cannot {a.verb} path "{a.path}"'
        text = f"forbidden: {message}" + (f": {reason}" if reason else "")
        return Forbidden(text)
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    message = f'User "{a.user.name}" cannot {a.verb} resource "{resource}" in API group "{a.group}" {where}'
    if reason:
        message += f": {reason}"
    qualified = f"{a.resource}.{a.group}" if a.group else a.resource
    err = Forbidden(
        f'{qualified} "{a.name}" is forbidden: {message}'
        if a.name
        else f"{qualified} is forbidden: {message}"
    )
    err.details = {
        "kind": a.resource,
        **({"name": a.name} if a.name else {}),
        **({"group": a.group} if a.group else {}),
    }
    return err
