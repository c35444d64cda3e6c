"""Who a request is from (k8s.io/apiserver pkg/authentication/user ``user.Info``) and the well-known names."""

from __future__ import annotations

from dataclasses import dataclass, field

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def as_review(self) -> dict:
        """The ``userInfo`` of a SelfSubjectReview or TokenReview status."""
        out: dict = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


# kube-apiserver's former insecure port (``--insecure-port``, removed in 1.20) served every request as this user,
# in system:masters: the emulator keeps such a port for in-process tests and its fault harness (docs/emulator.md)
INSECURE = UserInfo("system:unsecured", (MASTERS, AUTHENTICATED))
ANONYMOUS = UserInfo("system:anonymous", (UNAUTHENTICATED,))
# what the emulator's controllers act as (kube-controller-manager --use-service-account-credentials)
CONTROLLER_MANAGER = UserInfo("system:kube-controller-manager", (AUTHENTICATED,))


def service_account_user(namespace: str, name: str, uid: str = "", extra: dict | None = None) -> UserInfo:
    """A ServiceAccount's identity (pkg/serviceaccount ``UserInfo``): its groups are all ServiceAccounts' and
    its namespace's."""
    return UserInfo(
        f"{SA_PREFIX}{namespace}:{name}",
        (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED),
        uid,
        dict(extra or {}),
    )


def split_service_account(username: str) -> tuple[str, str] | None:
    if not username.startswith(SA_PREFIX):
        return None
    ns, _, name = username[len(SA_PREFIX) :].partition(":")
    return (ns, name) if ns and name and ":" not in name else None
