"""The OIDC issuer documents: a service-account token signed by the cluster's key verifies against the published
JWKS (joserfc, an independent JOSE implementation), with the kid the API server puts in its tokens; publishing
to S3 against moto."""

from __future__ import annotations

import json

import boto3
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from moto import mock_aws

from clusterspec.errors import UserError
from provision import irsa

ISSUER = "https://dlr-oidc.s3.us-west-2.amazonaws.com"


@pytest.fixture(scope="module")
def sa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pub(key) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def test_a_token_signed_with_the_sa_key_verifies_against_the_jwks(sa_key) -> None:
    docs = irsa.oidc_documents(_pub(sa_key), ISSUER)
    discovery = json.loads(docs[".well-known/openid-configuration"])
    assert discovery["issuer"] == ISSUER and discovery["jwks_uri"] == f"{ISSUER}/keys.json"
    assert discovery["id_token_signing_alg_values_supported"] == ["RS256"]
    jwks = json.loads(docs["keys.json"])
    kid = jwks["keys"][0]["kid"]
    private = RSAKey.import_key(sa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))  # fmt: skip
    claims = {"iss": ISSUER, "sub": "system:serviceaccount:u-alice:default", "aud": [irsa.AUDIENCE]}
    token = jwt.encode({"alg": "RS256", "kid": kid}, claims, private)
    decoded = jwt.decode(token, KeySet.import_key_set(jwks))
    assert decoded.claims["sub"] == "system:serviceaccount:u-alice:default"
    assert decoded.header["kid"] == kid


def test_kid_is_the_sha256_of_the_der_key_unpadded_base64url(sa_key) -> None:
    import base64
    import hashlib

    der = sa_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert irsa.key_id(sa_key.public_key()) == base64.urlsafe_b64encode(
        hashlib.sha256(der).digest()
    ).decode().rstrip("=")


def test_bad_keys_and_issuers_are_one_line(sa_key) -> None:
    with pytest.raises(UserError, match="must be RSA"):
        ec_pub = ec.generate_private_key(ec.SECP256R1()).public_key()
        irsa.oidc_documents(
            ec_pub.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
            ISSUER,
        )
    with pytest.raises(UserError, match="not a PEM public key"):
        irsa.oidc_documents(b"junk", ISSUER)
    with pytest.raises(UserError, match="https:// URL"):
        irsa.oidc_documents(_pub(sa_key), "http://x")


def test_publish_writes_json_objects(sa_key, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-west-2")
        s3.create_bucket(Bucket="dlr-oidc", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        keys = irsa.publish(irsa.oidc_documents(_pub(sa_key), ISSUER), "dlr-oidc", "us-west-2")
        assert keys == [".well-known/openid-configuration", "keys.json"]
        obj = s3.get_object(Bucket="dlr-oidc", Key="keys.json")
        assert obj["ContentType"] == "application/json"
        assert json.loads(obj["Body"].read())["keys"][0]["alg"] == "RS256"


def test_webhook_manifests_validate_and_trust_the_serving_certificate(tmp_path) -> None:
    from cryptography import x509
    from kubernetes_validate import validate
    from kubernetes_validate.utils import latest_version

    from clusterspec.loader import load_spec

    ca_pem, cert_pem, key_pem = irsa.webhook_tls(tmp_path / "ca", "dlr")
    docs = irsa.webhook_manifests(load_spec(), ca_pem)
    for doc in [*docs, irsa.webhook_secret(cert_pem, key_pem)]:
        validate(doc, latest_version(), strict=True)
    hook = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")["webhooks"][0]
    bundle = x509.load_pem_x509_certificate(__import__("base64").b64decode(hook["clientConfig"]["caBundle"]))
    cert = x509.load_pem_x509_certificate(cert_pem)
    cert.verify_directly_issued_by(bundle)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )
    svc = hook["clientConfig"]["service"]
    assert f"{svc['name']}.{svc['namespace']}.svc" in san  # the name the API server dials
    assert hook["failurePolicy"] == "Ignore"  # a webhook outage never blocks pod creation
    assert oct((tmp_path / "ca" / "ca.key").stat().st_mode & 0o777) == "0o600"
    # a second certificate comes from the same CA
    ca_again, _, _ = irsa.webhook_tls(tmp_path / "ca", "dlr")
    assert ca_again == ca_pem
