"""ServiceAccount tokens as kube-apiserver issues and checks them (pkg/serviceaccount: ``jwt.go``, ``claims.go``).

- **TokenRequest** (``POST .../serviceaccounts/<name>/token``, what the kubelet asks for each projected
  ``serviceAccountToken`` volume): a JWT from the issuer ``https://kubernetes.default.svc.cluster.local``
  (kubeadm's ``--service-account-issuer``) for the requested audiences (default: the API's own), bound to a pod
  (and its node) or a secret when asked (RS256 with kubeadm's RSA ``sa.key``); ``expirationSeconds`` at least 600 (validation: "may not specify a
  duration less than 10 minutes"), default one hour; a pod-bound token the kubelet asks for with 3607 s is
  extended to a year with ``kubernetes.io.warnafter`` at the hour (``--service-account-extend-token-expiration``).
- **legacy tokens** in Secrets of type ``kubernetes.io/service-account-token`` (the token controller fills them).
- times are the wall clock's, not the model's (a compressed model clock would expire tokens early), as the
  tokens are checked by parties outside the model too (AWS STS for IRSA);
- **authentication**: the signature, issuer, audience, time window (60 s of leeway), and that the ServiceAccount,
  pod, node or secret it is bound to still exist with the same uid; the user is
  ``system:serviceaccount:<ns>:<name>`` in ``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``, with
  the pod's name and uid in ``extra`` (``authentication.kubernetes.io/pod-name``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from autoscaler.emulator.auth.user import UserInfo, service_account_user

ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
DEFAULT_EXPIRATION_S = 3600
MIN_EXPIRATION_S = 600
KUBELET_EXPIRATION_S = 3607  # what the kubelet asks for a projected token (the admission plugin's default)
EXTENDED_EXPIRATION_S = 365 * 24 * 3600
LEEWAY_S = 60


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class InvalidToken(Exception):
    pass


class TokenIssuer:
    def __init__(self, api) -> None:
        self.api = api
        self.audiences = [ISSUER]  # --api-audiences defaults to the issuer
        self._kid: str | None = None

    @property
    def _key(self):
        return self.api.pki.sa_key

    @property
    def kid(self) -> str:
        """The unpadded base64url SHA-256 of the public key's PKIX DER (pkg/serviceaccount/jwt.go keyIDFromPublicKey)."""
        if self._kid is None:
            der = self._key.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            self._kid = _b64(hashlib.sha256(der).digest())
        return self._kid

    # --- signing -----------------------------------------------------------------------------------------
    def sign(self, claims: dict) -> str:
        header = _b64(json.dumps({"alg": "RS256", "kid": self.kid}, separators=(",", ":")).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signature = self._key.sign(f"{header}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{body}.{_b64(signature)}"

    def jwks(self) -> dict:
        """/openid/v1/jwks: the public key, as the ServiceAccountIssuerDiscovery endpoint serves it."""
        numbers = self._key.public_key().public_numbers()

        def uint(n: int) -> str:
            return _b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))

        return {"keys": [{"use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256", "n": uint(numbers.n),
                          "e": uint(numbers.e)}]}  # fmt: skip

    def discovery(self) -> dict:
        """/.well-known/openid-configuration."""
        return {
            "issuer": ISSUER,
            "jwks_uri": f"{ISSUER}/openid/v1/jwks",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def request(
        self,
        sa: dict,
        audiences: list[str] | None,
        expiration_s: int | None,
        bound: dict | None = None,
        node: dict | None = None,
    ) -> tuple[str, int]:
        """A bound token for ServiceAccount ``sa``: (token, expiry as a Unix time)."""
        now = int(time.time())  # wall time: other parties (AWS STS) compare it with theirs
        seconds = int(expiration_s or DEFAULT_EXPIRATION_S)
        meta = sa["metadata"]
        private: dict = {
            "namespace": meta["namespace"],
            "serviceaccount": {"name": meta["name"], "uid": meta["uid"]},
        }
        if bound is not None:
            kind = bound["kind"].lower()
            private[kind] = {"name": bound["metadata"]["name"], "uid": bound["metadata"]["uid"]}
            if kind == "pod" and seconds == KUBELET_EXPIRATION_S:
                private["warnafter"] = now + seconds
                seconds = EXTENDED_EXPIRATION_S
        if node is not None:
            private["node"] = {"name": node["metadata"]["name"], "uid": node["metadata"]["uid"]}
        claims = {
            "aud": list(audiences or self.audiences),
            "exp": now + seconds,
            "iat": now,
            "iss": ISSUER,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
            "nbf": now,
            "sub": f"system:serviceaccount:{meta['namespace']}:{meta['name']}",
        }
        return self.sign(claims), now + seconds

    def legacy(self, sa: dict, secret: dict) -> str:
        meta = sa["metadata"]
        return self.sign(
            {
                "iss": LEGACY_ISSUER,
                "kubernetes.io/serviceaccount/namespace": meta["namespace"],
                "kubernetes.io/serviceaccount/secret.name": secret["metadata"]["name"],
                "kubernetes.io/serviceaccount/service-account.name": meta["name"],
                "kubernetes.io/serviceaccount/service-account.uid": meta["uid"],
                "sub": f"system:serviceaccount:{meta['namespace']}:{meta['name']}",
            }
        )

    # --- checking ----------------------------------------------------------------------------------------
    def claims(self, token: str) -> dict:
        """The verified claims of a token this issuer signed; InvalidToken otherwise."""
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("not a JWT")
        try:
            header = json.loads(_unb64(parts[0]))
            claims = json.loads(_unb64(parts[1]))
            raw = _unb64(parts[2])
        except (ValueError, TypeError):
            raise InvalidToken("malformed token") from None
        if header.get("alg") != "RS256":
            raise InvalidToken("unexpected signing algorithm")
        try:
            self._key.public_key().verify(
                raw, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            raise InvalidToken("invalid signature") from None
        return claims

    def authenticate(self, token: str, audiences: list[str] | None = None) -> UserInfo:
        """The user a bearer token is (the API's audiences unless told), or InvalidToken."""
        claims = self.claims(token)
        store = self.api.model.store
        if claims.get("iss") == LEGACY_ISSUER:
            ns = claims.get("kubernetes.io/serviceaccount/namespace", "")
            secret = store.find("secrets", ns, claims.get("kubernetes.io/serviceaccount/secret.name", ""))
            if (
                secret is None
                or base64.b64decode((secret.get("data") or {}).get("token", "")).decode() != token
            ):
                raise InvalidToken("token has been invalidated")
            name = claims.get("kubernetes.io/serviceaccount/service-account.name", "")
            sa = self._service_account(
                ns, name, claims.get("kubernetes.io/serviceaccount/service-account.uid")
            )
            return service_account_user(ns, name, sa["metadata"]["uid"])
        if claims.get("iss") != ISSUER:
            raise InvalidToken("unknown issuer")
        wanted = set(audiences or self.audiences)
        if not wanted & set(claims.get("aud") or ()):
            raise InvalidToken("token audiences are invalid")
        now = time.time()
        if claims.get("exp", 0) + LEEWAY_S < now:
            raise InvalidToken("token has expired")
        if claims.get("nbf", 0) - LEEWAY_S > now:
            raise InvalidToken("token is not valid yet")
        private = claims.get("kubernetes.io") or {}
        ns = private.get("namespace", "")
        sa_ref = private.get("serviceaccount") or {}
        sa = self._service_account(ns, sa_ref.get("name", ""), sa_ref.get("uid"))
        extra: dict[str, list[str]] = {
            "authentication.kubernetes.io/credential-id": [f"JTI={claims.get('jti')}"]
        }
        for kind, store_kind, scoped in (
            ("pod", "pods", True),
            ("secret", "secrets", True),
            ("node", "nodes", False),
        ):
            ref = private.get(kind)
            if not ref:
                continue
            obj = store.find(store_kind, ns if scoped else None, ref.get("name", ""))
            if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
                raise InvalidToken(f"{kind} {ref.get('name')} bound to the token no longer exists")
            if kind == "pod" and obj["metadata"].get("deletionTimestamp"):
                raise InvalidToken("pod bound to the token is being deleted")
            if kind in ("pod", "node"):
                extra[f"authentication.kubernetes.io/{kind}-name"] = [ref["name"]]
                extra[f"authentication.kubernetes.io/{kind}-uid"] = [ref["uid"]]
        return service_account_user(ns, sa_ref.get("name", ""), sa["metadata"]["uid"], extra)

    def _service_account(self, ns: str, name: str, uid: str | None) -> dict:
        sa = self.api.model.store.find("serviceaccounts", ns, name)
        if sa is None:
            raise InvalidToken(f'serviceaccounts "{name}" not found')
        if uid and sa["metadata"].get("uid") != uid:
            raise InvalidToken(
                f"service account UID ({sa['metadata'].get('uid')}) does not match claim ({uid})"
            )
        return sa
