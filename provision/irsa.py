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

from clusterspec.errors import UserError
from provision import checkout

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


# --- the pod identity webhook ----------------------------------------------------------------------------------
WEBHOOK_IMAGE = "public.ecr.aws/eks/amazon-eks-pod-identity-webhook:v0.6.15"
WEBHOOK_DNS = ["pod-identity-webhook.kube-system.svc", "pod-identity-webhook.kube-system.svc.cluster.local"]


def webhook_tls(ca_dir, cluster: str, days: int = 365) -> tuple[bytes, bytes, bytes]:
    """(CA PEM, serving certificate PEM, key PEM) for the webhook's Service names, from a local CA kept in
    ``ca_dir`` (created on first use; its key mode 0600, outside the repository)."""
    import datetime as dt
    from pathlib import Path

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    from provision.users import _key_pem, _pem, _private

    ca_dir = Path(ca_dir)
    now = dt.datetime.now(dt.UTC)
    if not (ca_dir / "ca.key").exists():
        ca_key = ec.generate_private_key(ec.SECP384R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster} webhook CA")])
        ca = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(ca_key, hashes.SHA384())
        )  # fmt: skip
        _private(ca_dir / "ca.key", _key_pem(ca_key))
        (ca_dir / "ca.crt").write_bytes(_pem(ca))
    ca_key = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), None)
    ca = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, WEBHOOK_DNS[0])]))
        .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in WEBHOOK_DNS]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA384())
    )  # fmt: skip
    return _pem(ca), _pem(cert), _key_pem(key)


def webhook_manifests(cluster, ca_pem: bytes) -> list[dict]:
    """The webhook's objects from deploy/storage/pod-identity-webhook.yaml.j2 (no Secret: see webhook_secret)."""
    import yaml
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from provision.storage import TEMPLATES

    env = Environment(
        loader=FileSystemLoader(str(checkout.require(TEMPLATES))), undefined=StrictUndefined, autoescape=False
    )  # noqa: S701 - YAML
    text = env.get_template("pod-identity-webhook.yaml.j2").render(
        image=WEBHOOK_IMAGE, region=cluster.primary_region, ca_bundle=base64.b64encode(ca_pem).decode()
    )
    from provision import images

    return images.pin_docs([d for d in yaml.safe_load_all(text) if d], cluster)


def webhook_secret(cert_pem: bytes, key_pem: bytes) -> dict:
    """The TLS Secret, for creating through the API only (never rendered to a file)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "pod-identity-webhook-tls", "namespace": "kube-system"},
        "data": {
            "tls.crt": base64.b64encode(cert_pem).decode(),
            "tls.key": base64.b64encode(key_pem).decode(),
        },
    }
