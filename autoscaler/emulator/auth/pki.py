"""The cluster's PKI, as kubeadm lays it out (``/etc/kubernetes/pki``): one cluster CA (``ca.crt``, CN
``kubernetes``) that signs the API server's serving certificate, the admin's client certificate (``admin.conf``:
CN ``kubernetes-admin``, O ``system:masters``, as kubeadm wrote it before 1.29 and still writes
``super-admin.conf``) and, through kube-controller-manager's ``kubernetes.io/kube-apiserver-client`` signer, the
certificates CertificateSigningRequests ask for; and the ServiceAccount signing key (``sa.key``).

The CA and certificate keys are EC P-256 (kubeadm's ``--encryption-algorithm=ECDSA-P256``: generated in a few
milliseconds); the ServiceAccount key is RSA 2048 as kubeadm's default makes it (its tokens are RS256, which the
IRSA tooling of provision/irsa.py expects of a real control plane), made once per process on first use. Keys are
written only to a private temporary folder the TLS context loads them from, removed with it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service: the first address of kubeadm's default 10.96.0.0/12
DNS_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local")  # fmt: skip
CERT_DURATION = dt.timedelta(days=365)  # kubeadm's certificate validity (--cluster-signing-duration too)
_SA_KEY = None


def _sa_key():
    global _SA_KEY
    if _SA_KEY is None:
        _SA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _SA_KEY


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_usage(*, signature: bool, encipherment: bool = False, cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=signature,
        content_commitment=False,
        key_encipherment=encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


class Pki:
    def __init__(self, extra_ips: tuple[str, ...] = ()) -> None:
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("kubernetes"))
            .issuer_name(_name("kubernetes"))
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(signature=True, encipherment=True, cert_sign=True), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False
            )
            .sign(self.ca_key, hashes.SHA256())
        )
        self.extra_ips = tuple(extra_ips)
        self._dir: Path | None = None
        self._server: tuple[Path, Path] | None = None

    @property
    def sa_key(self):
        return _sa_key()

    @property
    def ca_pem(self) -> bytes:
        return cert_pem(self.ca_cert)

    def issue(
        self,
        public_key,
        cn: str,
        orgs: tuple[str, ...] = (),
        *,
        client: bool = True,
        server: bool = False,
        duration: dt.timedelta = CERT_DURATION,
        dns: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
        subject: x509.Name | None = None,
        usages: tuple[str, ...] = ("digital signature", "key encipherment"),
    ) -> x509.Certificate:
        """A certificate of the cluster CA for ``public_key``."""
        now = _now()
        eku = []
        if client:
            eku.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        if server:
            eku.append(ExtendedKeyUsageOID.SERVER_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject or _name(cn, orgs))
            .issuer_name(self.ca_cert.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + duration)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                _key_usage(
                    signature="digital signature" in usages, encipherment="key encipherment" in usages
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage(eku), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()), critical=False
            )
        )
        names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(self.ca_key, hashes.SHA256())

    def client_credentials(self, cn: str, orgs: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) of a new client key pair (kubeadm's admin.conf, a kubelet's)."""
        key = ec.generate_private_key(ec.SECP256R1())
        return cert_pem(self.issue(key.public_key(), cn, orgs)), key_pem(key)

    def admin_credentials(self) -> tuple[bytes, bytes]:
        """admin.conf's client certificate: CN kubernetes-admin in system:masters."""
        return self.client_credentials("kubernetes-admin", ("system:masters",))

    def directory(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="emulator-pki-"))
            os.chmod(self._dir, 0o700)
            (self._dir / "ca.crt").write_bytes(self.ca_pem)
        return self._dir

    def serving_files(self) -> tuple[Path, Path, Path]:
        """(certificate, key, CA) files of the API server's serving certificate (apiserver.crt's SANs)."""
        if self._server is None:
            key = ec.generate_private_key(ec.SECP256R1())
            cert = self.issue(
                key.public_key(),
                "kube-apiserver",
                client=False,
                server=True,
                dns=DNS_NAMES,
                ips=("127.0.0.1", "::1", SERVICE_IP, *self.extra_ips),
            )
            d = self.directory()
            crt, k = d / f"apiserver-{secrets.token_hex(4)}.crt", d / "apiserver.key"
            crt.write_bytes(cert_pem(cert))
            fd = os.open(k, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key_pem(key))
            self._server = (crt, k)
        return self._server[0], self._server[1], self.directory() / "ca.crt"

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
            self._server = None


def subject_user(cert: dict | x509.Certificate) -> tuple[str, tuple[str, ...]]:
    """(user, groups) of a client certificate as the x509 authenticator reads it: CN is the user, each O a group
    (k8s.io/apiserver pkg/authentication/request/x509 ``CommonNameUserConversion``). Takes ``ssl``'s peer
    certificate dict or a parsed certificate."""
    if isinstance(cert, x509.Certificate):
        cn = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        return (cn[0] if cn else ""), tuple(orgs)
    cn, orgs = "", []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                cn = value
            elif key == "organizationName":
                orgs.append(value)
    return cn, tuple(orgs)
