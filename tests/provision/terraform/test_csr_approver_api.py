"""Node identity through the real API server (issue 36; the local stack's kube-apiserver, kubeadm's flags: Node and
RBAC authorization, NodeRestriction admission). What approve-csrs decides is in test_csr_approver.py (the real API
server and EC2 in moto); here, the signer that refuses what it denies, and what a node identity may not do: request
the autoscaler's ServiceAccount token, or label itself a control-plane node to draw the autoscaler's pods."""

from __future__ import annotations

import base64
import ipaddress
import json
import random

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from clusterspec.names import AUTOSCALER_SERVICE_ACCOUNT
from tests.support import wait_until

KEY = ec.generate_private_key(ec.SECP256R1())


def _ec2_name() -> str:
    return f"ip-10-{random.randint(0, 255)}-{random.randint(0, 255)}-{random.randint(1, 254)}.us-west-2.compute.internal"


def _request(cn: str, o: str = "system:nodes", sans: tuple[str, ...] = (), ips: tuple[str, ...] = ()) -> str:
    name = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )
    builder = x509.CertificateSigningRequestBuilder().subject_name(name)
    alt = [x509.DNSName(s) for s in sans] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if alt:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    csr = builder.sign(KEY, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def test_the_signer_fails_a_kubelet_client_request_with_alternative_names(kube):
    """Why approve-csrs denies any request with alternative names (data/csr_approver_cases.yaml), the instance's
    own included: approved, kube-controller-manager's kubelet-client signer fails it instead of signing."""
    name, node = kube.unique("csr-sans"), _ec2_name()
    ip = node.split(".")[0][3:].replace("-", ".")
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                     "request": _request(f"system:node:{node}", sans=[node], ips=[ip]),
                     "usages": ["digital signature", "client auth"]}}  # fmt: skip
    try:
        kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
        kube.kubectl("certificate", "approve", name, check=True)

        def failed() -> str:
            got = json.loads(kube.kubectl("get", "csr", name, "-o", "json", check=True).stdout)
            done = [c for c in (got.get("status") or {}).get("conditions") or [] if c["type"] == "Failed"]
            return done[0].get("message", "failed") if done else ""

        assert "DNS subjectAltNames are not allowed" in wait_until(
            failed, timeout_s=60, what="the signer's verdict"
        )
    finally:
        kube.kubectl("delete", "csr", name, "--ignore-not-found")


def test_a_node_identity_cannot_take_the_autoscalers_token_nor_the_control_plane_label(kube):
    ns = kube.namespace("as")
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": AUTOSCALER_SERVICE_ACCOUNT, "namespace": ns},
    }
    kube.kubectl("create", "-f", "-", input=json.dumps(sa), check=True)
    worker = _ec2_name()
    as_node = [f"--as=system:node:{worker}", "--as-group=system:nodes", "--as-group=system:authenticated"]
    done = kube.kubectl(*as_node, "-n", ns, "create", "token", AUTOSCALER_SERVICE_ACCOUNT)
    assert done.returncode != 0 and done.stdout == ""
    assert (
        f'User "system:node:{worker}" cannot create resource "serviceaccounts/token" in API group "" in the '
        f'namespace "{ns}"'
    ) in done.stderr
    # the autoscaler runs on control-plane nodes only (deploy/manifests/deployment.yaml.j2): a kubelet may not
    # give itself that label (NodeRestriction)
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": worker, "labels": {"node-role.kubernetes.io/control-plane": ""}}}  # fmt: skip
    done = kube.kubectl(*as_node, "create", "-f", "-", input=json.dumps(node))
    assert done.returncode != 0
    assert "is not allowed to set the following labels: node-role.kubernetes.io/control-plane" in done.stderr
