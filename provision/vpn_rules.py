"""What AWS Client VPN accepts of its certificates (mutual authentication), as checks over PEM text: the preflight
runs them on what ACM holds (provision/preflight.py), `invoke vpn-ca` on what it is about to import.

AWS Client VPN Administrator Guide, "Mutual authentication" and "Client authentication" (requirements):
- server and client certificates have RSA keys of 1024 or 2048 bits; ECDSA and RSA 4096 are refused;
- the server certificate carries the TLS Web Server Authentication extended key usage, client certificates
  TLS Web Client Authentication;
- the certificate named as the client CA (``root_certificate_chain_arn``) comes with the chain of the CA that
  issued the clients' certificates, and the server certificate with the chain of its issuer (ACM import with
  ``CertificateChain``), each link signed by the next;
- certificates are valid now (not yet valid and expired certificates are refused by ACM's association).
"""

from __future__ import annotations

import datetime as dt
import re

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

RSA_BITS = (1024, 2048)
GUIDE = 'Client VPN Administrator Guide, "Mutual authentication"'
SERVER, CLIENT_CA = "server", "client CA"


def _certs(pem: str | None) -> list[x509.Certificate]:
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", pem or "", re.S)
    return [x509.load_pem_x509_certificate(b.encode()) for b in blocks]


def key_problem(cert: x509.Certificate) -> str | None:
    key = cert.public_key()
    if isinstance(key, rsa.RSAPublicKey) and key.key_size in RSA_BITS:
        return None
    kind = (
        f"RSA {key.key_size}-bit"
        if isinstance(key, rsa.RSAPublicKey)
        else type(key).__name__.removeprefix("_")
    )
    return f"has a {kind} key; Client VPN accepts RSA 1024 or 2048-bit keys only ({GUIDE})"


def _usages(cert: x509.Certificate) -> set:
    try:
        return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        return set()


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except (ValueError, TypeError, InvalidSignature):
        return False


def problems(role: str, certificate: str, chain: str | None, now: dt.datetime | None = None) -> list[str]:
    """What Client VPN would refuse of ``certificate`` (PEM) with ``chain`` (PEM, issuer first) in ``role``
    (SERVER or CLIENT_CA); phrases without the subject ("has a ... key"), for the caller to prefix."""
    now = now or dt.datetime.now(dt.UTC)
    leaf, links = _certs(certificate)[0], _certs(chain)
    out = []
    if bad := key_problem(leaf):
        out.append(bad)
    if leaf.not_valid_after_utc <= now:
        out.append(
            f"expired on {leaf.not_valid_after_utc:%Y-%m-%d}; issue a new one (`invoke vpn-ca --renew`)"
        )
    elif leaf.not_valid_before_utc > now:
        out.append(f"is not valid before {leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC")
    if role == SERVER and ExtendedKeyUsageOID.SERVER_AUTH not in _usages(leaf):
        out.append(
            f"has no TLS Web Server Authentication extended key usage; a server certificate needs it ({GUIDE})"
        )
    if not links:
        if not (role == CLIENT_CA and _is_ca(leaf) and _signed_by(leaf, leaf)):
            out.append(
                f"was imported without the chain of the CA that issued it; import it with --certificate-chain ({GUIDE})"
            )
        return out
    path = [leaf]
    for (
        link
    ) in links:  # the path ends at the first self-signed link (its root); what follows is not part of it
        path.append(link)
        if link.subject == link.issuer and _signed_by(link, link):
            break
    links = path[1:]
    for child, parent in zip(path, path[1:], strict=False):
        if not _is_ca(parent):
            out.append(
                f"chain: {parent.subject.rfc4514_string()} is not a CA certificate (basicConstraints CA:FALSE)"
            )
        elif not _signed_by(child, parent):
            out.append(
                f"chain: {child.subject.rfc4514_string()} is not signed by {parent.subject.rfc4514_string()}; "
                "import the chain of the CA that issued it"
            )
    for link in links:
        if link.not_valid_after_utc <= now:
            out.append(
                f"chain: {link.subject.rfc4514_string()} expired on {link.not_valid_after_utc:%Y-%m-%d}"
            )
    return out
