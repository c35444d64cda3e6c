"""User impersonation (``kubectl --as``/``--as-group``), as k8s.io/apiserver pkg/endpoints/filters/impersonation.go
``WithImpersonation`` does it: the ``Impersonate-User``, ``Impersonate-Group``, ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` headers each need the ``impersonate`` verb on ``users``, ``groups``,
``serviceaccounts`` (for ``system:serviceaccount:<ns>:<name>``, in that namespace), ``uids`` or ``userextras/<key>``
(group ``authentication.k8s.io`` for the last two); the impersonated user is then authenticated
(``system:authenticated`` added, and a ServiceAccount's groups)."""

from __future__ import annotations

from urllib.parse import unquote

from autoscaler.emulator.auth.rbac import Attributes, Authorizer, forbidden_error
from autoscaler.emulator.auth.user import AUTHENTICATED, UserInfo, service_account_user, split_service_account
from autoscaler.emulator.errors import BadRequest


def _values(headers: dict, name: str) -> list[str]:
    out = []
    for k, v in headers.items():
        if k.lower() == name:
            out.extend(v if isinstance(v, list) else [v])
    return out


def impersonate(authz: Authorizer, requester: UserInfo, headers: dict) -> UserInfo:
    users = _values(headers, "impersonate-user")
    groups = _values(headers, "impersonate-group")
    uids = _values(headers, "impersonate-uid")
    extra: dict[str, list[str]] = {}
    for k, v in headers.items():
        if k.lower().startswith("impersonate-extra-"):
            extra.setdefault(unquote(k[len("impersonate-extra-") :]).lower(), []).extend(
                v if isinstance(v, list) else [v]
            )
    if not users:
        if groups or uids or extra:
            raise BadRequest("requested impersonation of groups, uid or extra without impersonating a user")
        return requester
    username = users[0]
    checks: list[Attributes] = []
    sa = split_service_account(username)
    if sa is not None:
        checks.append(Attributes(requester, "impersonate", "", "serviceaccounts", "", sa[0], sa[1]))
    else:
        checks.append(Attributes(requester, "impersonate", "", "users", "", "", username))
    for g in groups:
        checks.append(Attributes(requester, "impersonate", "", "groups", "", "", g))
    for u in uids:
        checks.append(Attributes(requester, "impersonate", "authentication.k8s.io", "uids", "", "", u))
    for key, values in extra.items():
        for v in values:
            checks.append(
                Attributes(requester, "impersonate", "authentication.k8s.io", "userextras", key, "", v)
            )
    for a in checks:
        allowed, reason = authz.allows(a)
        if not allowed:
            raise forbidden_error(a, reason)
    if sa is not None:
        base = service_account_user(sa[0], sa[1])
        all_groups = list(dict.fromkeys([*groups, *base.groups]))
    else:
        all_groups = (
            list(dict.fromkeys([*groups, AUTHENTICATED])) if username != "system:anonymous" else groups
        )
    return UserInfo(username, tuple(all_groups), uids[0] if uids else "", extra)
