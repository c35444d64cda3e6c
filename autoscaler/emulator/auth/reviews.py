"""The review kinds: answered at once, never stored (pkg/registry/authorization, pkg/registry/authentication).

- ``SelfSubjectAccessReview`` (``kubectl auth can-i VERB RESOURCE``), ``SubjectAccessReview``,
  ``LocalSubjectAccessReview`` (its ``spec.resourceAttributes.namespace`` must be the request's): the authorizer's
  decision and reason for the attributes;
- ``SelfSubjectRulesReview`` (``kubectl auth can-i --list``): the rules that apply in a namespace;
- ``TokenReview``: whether a token authenticates (for the API's or the given audiences), and as whom;
- ``SelfSubjectReview`` (``kubectl auth whoami``): the caller's own user info.
"""

from __future__ import annotations

from autoscaler.emulator.auth.rbac import Attributes, _matches
from autoscaler.emulator.auth.tokens import InvalidToken
from autoscaler.emulator.auth.user import MASTERS, UserInfo
from autoscaler.emulator.errors import BadRequest, Invalid

REVIEWS = {
    "selfsubjectaccessreviews",
    "subjectaccessreviews",
    "localsubjectaccessreviews",
    "selfsubjectrulesreviews",
    "tokenreviews",
    "selfsubjectreviews",
}


def _attributes(user: UserInfo, spec: dict) -> Attributes:
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if ra is None and nra is None:
        raise Invalid("spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or "
                      "resourceAttributes must be specified")  # fmt: skip
    if ra is not None:
        return Attributes(user, ra.get("verb", ""), ra.get("group", ""), ra.get("resource", ""),
                          ra.get("subresource", ""), ra.get("namespace", ""), ra.get("name", ""))  # fmt: skip
    return Attributes(user, nra.get("verb", ""), path=nra.get("path", ""), is_resource=False)


def _reason(authz, a: Attributes) -> tuple[bool, str]:
    if MASTERS in a.user.groups:
        return True, ""
    errors: list[str] = []
    for binding, rule in authz.visit(a.user, a.namespace if a.is_resource else "", errors):
        if _matches(rule, a):
            ref = binding.get("roleRef") or {}
            subject = next(
                (s for s in binding.get("subjects") or () if s.get("name") in (a.user.name, *a.user.groups)
                 or s.get("kind") == "ServiceAccount"), {})  # fmt: skip
            where = (f'RoleBinding "{binding["metadata"]["name"]}/{binding["metadata"].get("namespace")}"'
                     if binding.get("kind") == "RoleBinding" or binding["metadata"].get("namespace")
                     else f'ClusterRoleBinding "{binding["metadata"]["name"]}"')  # fmt: skip
            return True, (f'RBAC: allowed by {where} of {ref.get("kind")} "{ref.get("name")}" to '
                          f'{subject.get("kind", "User")} "{subject.get("name", a.user.name)}"')  # fmt: skip
    return False, ("RBAC: " + ", ".join(errors)) if errors else ""


def answer(api, plural: str, payload: dict, namespace: str | None, user: UserInfo) -> dict:
    """The review with its status filled in."""
    obj = dict(payload or {})
    spec = obj.get("spec") or {}
    authz = api.authorizer
    if plural == "selfsubjectaccessreviews":
        allowed, reason = _reason(authz, _attributes(user, spec))
        obj["status"] = {"allowed": allowed, **({"reason": reason} if reason else {})}
    elif plural in ("subjectaccessreviews", "localsubjectaccessreviews"):
        if plural == "localsubjectaccessreviews":
            ns = (spec.get("resourceAttributes") or {}).get("namespace")
            if spec.get("nonResourceAttributes") is not None or ns != namespace:
                raise BadRequest("spec.resourceAttributes.namespace must match metadata.namespace")
        if not spec.get("user") and not spec.get("groups"):
            raise Invalid('SubjectAccessReview "" is invalid: spec.user: Invalid value: "": at least one of user '
                          "or group must be specified")  # fmt: skip
        subject = UserInfo(spec.get("user", ""), tuple(spec.get("groups") or ()), spec.get("uid", ""),
                           dict(spec.get("extra") or {}))  # fmt: skip
        allowed, reason = _reason(authz, _attributes(subject, spec))
        obj["status"] = {"allowed": allowed, **({"reason": reason} if reason else {})}
    elif plural == "selfsubjectrulesreviews":
        ns = spec.get("namespace", "")
        if MASTERS in user.groups:
            rules = [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ]
            errors: list[str] = []
        else:
            rules, errors = authz.rules_for(user, ns)
        resource_rules, non_resource = [], []
        for r in rules:
            if r.get("nonResourceURLs"):
                non_resource.append({"verbs": r.get("verbs", []), "nonResourceURLs": r["nonResourceURLs"]})
            else:
                entry = {"verbs": r.get("verbs", []), "apiGroups": r.get("apiGroups", []),
                         "resources": r.get("resources", [])}  # fmt: skip
                if r.get("resourceNames"):
                    entry["resourceNames"] = r["resourceNames"]
                resource_rules.append(entry)
        obj["status"] = {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource,
            "incomplete": bool(errors),
        }
        if errors:
            obj["status"]["evaluationError"] = ", ".join(errors)
    elif plural == "tokenreviews":
        try:
            who = api.tokens.authenticate(spec.get("token", ""), spec.get("audiences") or None)
            obj["status"] = {"authenticated": True, "user": who.as_review(),
                             "audiences": list(spec.get("audiences") or api.tokens.audiences)}  # fmt: skip
        except InvalidToken as e:
            obj["status"] = {"authenticated": False, "error": f"[invalid bearer token, {e}]", "user": {}}
    elif plural == "selfsubjectreviews":
        obj["status"] = {"userInfo": user.as_review()}
    obj.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    return obj
