"""The Client VPN's certificates (issue 36): what `invoke add-user` and `invoke vpn-ca` issue chains and meets
Client VPN's key rules as the real receiver checks them (``openssl verify`` with the TLS client and server
purposes, the key's type and size as openssl reads it), `invoke vpn-ca` imports them into ACM before any cluster
exists, and the preflight accepts them and refuses, against moto's ACM, what Client VPN would refuse
(tests/provision/data/vpn_certificate_cases.yaml)."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import boto3
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import preflight, users, vpn_ca

CASES = yaml.safe_load((Path(__file__).parent / "data" / "vpn_certificate_cases.yaml").read_text())
REGION = "us-west-2"


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture
def acm(monkeypatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield boto3.client("acm", region_name=REGION)


def _openssl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)


def _key_text(cert: Path) -> str:
    return _openssl("x509", "-in", str(cert), "-noout", "-text").stdout


def test_issued_certificates_chain_and_meet_client_vpn_key_rules(tmp_path, spec):
    ca = users.VpnCa(tmp_path / "vpn-ca", spec.name)
    key, cert, _ = ca.issue("alice", spec.domain)
    skey, scert, chain = ca.issue_server(spec.domain)
    (tmp_path / "client.crt").write_bytes(cert)
    (tmp_path / "server.crt").write_bytes(scert)
    (tmp_path / "chain.pem").write_bytes(chain)
    for leaf, purpose in (("client.crt", "sslclient"), ("server.crt", "sslserver")):
        done = _openssl("verify", "-x509_strict", "-purpose", purpose, "-CAfile", str(ca.cert_path),
                        str(tmp_path / leaf))  # fmt: skip
        assert done.returncode == 0 and done.stdout.strip().endswith(": OK"), done.stdout + done.stderr
    # a client certificate is no server certificate, and the other way round (each usage is the one it needs)
    wrong = _openssl(
        "verify", "-purpose", "sslserver", "-CAfile", str(ca.cert_path), str(tmp_path / "client.crt")
    )
    assert wrong.returncode != 0
    for pem in (ca.cert_path, tmp_path / "client.crt", tmp_path / "server.crt"):
        text = _key_text(pem)
        assert "Public Key Algorithm: rsaEncryption" in text and "Public-Key: (2048 bit)" in text, pem
        assert "sha256WithRSAEncryption" in text
    # the keys handed out match their certificates (what OpenVPN on the laptop and ACM's import check)
    for k, leaf in ((key, "client.crt"), (skey, "server.crt")):
        held = subprocess.run(
            ["openssl", "rsa", "-noout", "-modulus"], input=k, capture_output=True, check=True
        )
        shown = _openssl("x509", "-noout", "-modulus", "-in", str(tmp_path / leaf))
        assert held.stdout.decode() == shown.stdout


def test_an_ec_ca_from_before_is_refused_in_one_line(tmp_path, spec):
    folder = tmp_path / "vpn-ca"
    folder.mkdir()
    key = ec.generate_private_key(ec.SECP384R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old CA")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + dt.timedelta(days=9))
            .sign(key, hashes.SHA384()))  # fmt: skip
    (folder / "ca.key").write_bytes(users._key_pem(key))
    (folder / "ca.crt").write_bytes(users._pem(cert))
    with pytest.raises(UserError) as e:
        users.VpnCa(folder, spec.name).issue("alice", spec.domain)
    assert "the VPN CA has an EC key, which Client VPN refuses" in str(e.value)
    assert "\n" not in str(e.value)
    assert (folder / "ca.key").read_bytes() == users._key_pem(key)  # nothing overwritten


def test_vpn_ca_imports_before_any_cluster_and_the_preflight_accepts_it(tmp_path, spec, acm):
    out = tmp_path / "terraform"
    first = vpn_ca.create(spec, acm, out, tmp_path)
    assert first.tfvars == out / REGION / "client_vpn.auto.tfvars"
    assert preflight.tfvars(out / REGION) == {v: first.arn for v in preflight.CERTIFICATE_VARIABLES}
    assert (
        preflight.check_certificates(spec, lambda s, r: boto3.client(s, region_name=r), {}, out / REGION)
        == []
    )
    body = acm.get_certificate(CertificateArn=first.arn)
    assert "PRIVATE KEY" not in body["Certificate"] + body["CertificateChain"]
    anchor = (out / "global" / "lab_vpn_ca.auto.tfvars").read_text()  # the researchers' trust anchor
    assert (tmp_path / "vpn-ca" / "ca.crt").read_text().strip() in anchor and "PRIVATE KEY" not in anchor
    # again: kept; --renew: a new certificate at the same ARN
    again = vpn_ca.create(spec, acm, out, tmp_path)
    assert again.arn == first.arn and any(
        line.startswith("kept the server certificate") for line in again.lines
    )
    renewed = vpn_ca.create(spec, acm, out, tmp_path, renew=True)
    assert renewed.arn == first.arn
    assert acm.get_certificate(CertificateArn=first.arn)["Certificate"] != body["Certificate"]
    # laptops' certificates come from the same CA that the endpoint trusts
    _, cert, _ = users.VpnCa(tmp_path / "vpn-ca", spec.name).issue("alice", spec.domain)
    chain = x509.load_pem_x509_certificate(
        acm.get_certificate(CertificateArn=first.arn)["CertificateChain"].encode()
    )
    x509.load_pem_x509_certificate(cert).verify_directly_issued_by(chain)


def _key(kind: str):
    if kind.startswith("rsa"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(kind[3:]))
    return ec.generate_private_key(ec.SECP256R1())


def _ca(name: str):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=30))
            .not_valid_after(now + dt.timedelta(days=3000))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(key, hashes.SHA256()))  # fmt: skip
    return key, cert


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_preflight_refuses_what_client_vpn_refuses(case, spec, acm, tmp_path):
    ca_key, ca_cert = _ca("the lab's VPN CA")
    key = _key(case["key"])
    now = dt.datetime.now(dt.UTC)
    start = now - dt.timedelta(days=30)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vpn.research.internal")]))
               .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(now + dt.timedelta(days=case["days"]))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))  # fmt: skip
    usage = {"server": ExtendedKeyUsageOID.SERVER_AUTH, "client": ExtendedKeyUsageOID.CLIENT_AUTH}.get(
        case["usage"]
    )
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    chain = {"ca": ca_cert, "stranger": _ca("a stranger's CA")[1], "none": None}[case["chain"]]
    args = {"Certificate": cert.public_bytes(serialization.Encoding.PEM),
            "PrivateKey": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption())}  # fmt: skip
    if chain is not None:
        args["CertificateChain"] = chain.public_bytes(serialization.Encoding.PEM)
    arn = acm.import_certificate(**args)["CertificateArn"]
    var = "client_vpn_server_certificate_arn" if case["role"] == "server" else "client_vpn_client_ca_arn"
    other = next(v for v in preflight.CERTIFICATE_VARIABLES if v != var)
    good = vpn_ca.create(
        spec, acm, tmp_path / "terraform", tmp_path
    ).arn  # the other variable: the project's own
    problems = preflight.check_certificates(
        spec, lambda s, r: boto3.client(s, region_name=r), {f"TF_VAR_{var}": arn, f"TF_VAR_{other}": good}
    )
    if not case["expect"]:
        assert problems == []
    for phrase in case["expect"]:
        assert any(line.startswith(f"TF_VAR_{var}: {arn} ") and phrase in line for line in problems), problems
    assert all("\n" not in line for line in problems)


def test_a_certificate_that_expires_after_import_is_refused(tmp_path, spec):
    from provision import vpn_rules

    ca = users.VpnCa(tmp_path / "vpn-ca", spec.name)
    _, cert, chain = ca.issue_server(spec.domain)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=users.SERVER_CERT_DAYS + 1)
    (line,) = vpn_rules.problems(vpn_rules.SERVER, cert.decode(), chain.decode(), now=later)
    assert line.startswith("expired on ") and "invoke vpn-ca --renew" in line
    assert vpn_rules.problems(vpn_rules.SERVER, cert.decode(), chain.decode()) == []
