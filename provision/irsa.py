"""IAM roles for service accounts on a self-managed cluster: the OIDC issuer the API server signs service-account
tokens as, published to S3 so that AWS STS can verify them (AssumeRoleWithWebIdentity).

- ``oidc_documents``: the discovery document and the JWKS for the cluster's service-account signing key, as the
  API server itself serves them (kubernetes pkg/serviceaccount/openidmetadata.go): ``issuer``, ``jwks_uri``,
  ``response_types_supported: [id_token]``, ``subject_types_supported: [public]``,
  ``id_token_signing_alg_values_supported: [RS256]``; each key's ``kid`` is the unpadded base64url SHA-256 of
  its PKIX DER encoding (``keyIDFromPublicKey`` in pkg/serviceaccount/jwt.go), so the ``kid`` in the tokens
  matches.
- ``publish``: writes both to the issuer bucket (Terraform module service_account_issuer) with
  ``Content-Type: application/json``.

The API server needs ``--service-account-issuer=<issuer_url>``, ``--service-account-jwks-uri=<issuer_url>/keys.json``
and the pod identity webhook (deploy/storage) injects the projected token with audience ``sts.amazonaws.com``.
"""

from __future__ import annotations

import base64
import hashlib
import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from provision.errors import UserError

AUDIENCE = "sts.amazonaws.com"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(n: int) -> str:
    return _b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def issuer_url(bucket: str, region: str) -> str:
    return f"https://{bucket}.s3.{region}.amazonaws.com"


def key_id(public_key) -> str:
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64url(hashlib.sha256(der).digest())


def load_public_key(pem: bytes):
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError:
        raise UserError(
            "sa.pub: not a PEM public key (the control plane's /etc/kubernetes/pki/sa.pub)"
        ) from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise UserError("sa.pub: the service-account key must be RSA (kubeadm's default); RS256 tokens only")
    return key


def oidc_documents(public_key_pem: bytes, issuer: str) -> dict[str, bytes]:
    """``{object key: body}`` for the issuer bucket."""
    if not issuer.startswith("https://") or issuer.endswith("/"):
        raise UserError(f"issuer {issuer!r}: must be an https:// URL without a trailing slash")
    key = load_public_key(public_key_pem)
    numbers = key.public_numbers()
    jwks = {"keys": [{"use": "sig", "kty": "RSA", "kid": key_id(key), "alg": "RS256",
                      "n": _uint(numbers.n), "e": _uint(numbers.e)}]}  # fmt: skip
    discovery = {
        "issuer": issuer,
        "jwks_uri": f"{issuer}/keys.json",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
    return {
        ".well-known/openid-configuration": json.dumps(discovery, indent=1).encode(),
        "keys.json": json.dumps(jwks, indent=1).encode(),
    }


def publish(documents: dict[str, bytes], bucket: str, region: str) -> list[str]:
    import boto3

    s3 = boto3.client("s3", region_name=region)
    for key, body in documents.items():
        s3.put_object(
            Bucket=bucket, Key=key, Body=body, ContentType="application/json", CacheControl="max-age=300"
        )
    return sorted(documents)
