"""Who a request on the secure port is from, as kube-apiserver's authenticator union decides (k8s.io/apiserver
pkg/authentication/request/union): a client certificate of the cluster CA (the TLS handshake verified its chain;
CN is the user, each O a group), else a bearer token (a ServiceAccount token, :mod:`tokens`), else anonymous
(``system:anonymous`` in ``system:unauthenticated``: kubeadm leaves ``--anonymous-auth`` on). A bearer token that
does not verify is 401 Unauthorized, not anonymous; so is any other ``Authorization`` scheme."""

from __future__ import annotations

from autoscaler.emulator.auth.pki import subject_user
from autoscaler.emulator.auth.tokens import InvalidToken
from autoscaler.emulator.auth.user import ANONYMOUS, AUTHENTICATED, UserInfo
from autoscaler.emulator.errors import Unauthorized


def authenticate(api, peer_cert: dict | None, authorization: str | None) -> UserInfo:
    if peer_cert:
        name, groups = subject_user(peer_cert)
        if name:
            return UserInfo(name, tuple(dict.fromkeys([*groups, AUTHENTICATED])))
    if authorization:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("Unauthorized")
        try:
            with api.model.lock:
                return api.tokens.authenticate(token.strip())
        except InvalidToken:
            raise Unauthorized("Unauthorized") from None
    return ANONYMOUS
