"""The kubelet's serving certificate as a kubelet with ``serverTLSBootstrap`` gets one: a CSR to the
``kubernetes.io/kubelet-serving`` signer (subject ``system:node:<node>`` in ``system:nodes``, the node's address
and name as SANs), approved (by the cluster's admin here, where kubelet-csr-approver or an admin would), signed by
kube-controller-manager with the cluster CA."""

from __future__ import annotations

import base64
import ipaddress
import time
import uuid
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from localcluster.kubelet.api import Api

SIGNER = "kubernetes.io/kubelet-serving"


class NotSigned(RuntimeError):
    pass


def serving_certificate(
    api: Api, node: str, ip: str, folder: Path, timeout_s: float = 30.0
) -> tuple[Path, Path]:
    """(certificate, key) files under ``folder`` for ``node`` at ``ip``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                         x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}")])  # fmt: skip
    sans = x509.SubjectAlternativeName([x509.DNSName(node), x509.IPAddress(ipaddress.ip_address(ip))])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).add_extension(sans, critical=False)
    pem = csr.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    name = f"{node[:200]}-serving-{uuid.uuid4().hex[:6]}"
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    api.request("POST", path, {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": base64.b64encode(pem).decode(), "signerName": SIGNER, "expirationSeconds": 86400,
                 "usages": ["digital signature", "server auth"]},
    })  # fmt: skip
    csr_obj = api.get(f"{path}/{name}") or {}
    csr_obj.setdefault("status", {})["conditions"] = [{"type": "Approved", "status": "True",
                                                       "reason": "LocalClusterKubelet",
                                                       "message": "the process kubelet's serving certificate"}]  # fmt: skip
    api.request("PUT", f"{path}/{name}/approval", csr_obj)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = (api.get(f"{path}/{name}") or {}).get("status") or {}
        if status.get("certificate"):
            folder.mkdir(parents=True, exist_ok=True)
            crt, pkey = folder / "kubelet-server.crt", folder / "kubelet-server.key"
            pkey.touch(mode=0o600)
            pkey.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))  # fmt: skip
            crt.write_bytes(base64.b64decode(status["certificate"]))
            return crt, pkey
        failed = [c for c in status.get("conditions") or () if c.get("type") == "Failed"]
        if failed:
            raise NotSigned(f"CSR {name}: {failed[0].get('message')}")
        time.sleep(0.2)
    raise NotSigned(
        f"CSR {name}: not signed after {timeout_s:.0f} s (is kube-controller-manager's signer on?)"
    )
