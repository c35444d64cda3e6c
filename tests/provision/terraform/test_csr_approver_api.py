"""Node identity through the real API server (issue 36; the local stack's kube-apiserver, kubeadm's flags: Node and
RBAC authorization, NodeRestriction admission). The control plane's `approve-csrs` (bootstrap.sh, verbatim) runs
with the real kubectl against kubelet client requests that a join-token identity made (impersonated, as the API
server records its username), EC2 faked: a request for a name no running instance has is denied, one for a running
instance's name approved and signed, one for an existing Node denied. And what a node identity may not do: request
the autoscaler's ServiceAccount token, or label itself a control-plane node to draw the autoscaler's pods."""

from __future__ import annotations

import base64
import json
import random
import subprocess

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from clusterspec.names import AUTOSCALER_SERVICE_ACCOUNT
from tests.provision.terraform.tf_files import MODULES

BOOTSTRAP = MODULES / "control_plane/scripts/bootstrap.sh"
KEY = ec.generate_private_key(ec.SECP256R1())
FAKE_AWS = """#!/bin/bash
# ec2 describe-instances --region R --filters Name=private-dns-name,Values=NAME ...: the ids of RUNNING names
for a in "$@"; do [[ $a == Name=private-dns-name,Values=* ]] && name=${a#Name=private-dns-name,Values=}; done
grep -qx "$name" "$RUNNING" && echo i-0123456789abcdef0
exit 0
"""


def _ec2_name() -> str:
    return f"ip-10-{random.randint(0, 255)}-{random.randint(0, 255)}-{random.randint(1, 254)}.us-west-2.compute.internal"


def _request(cn: str, o: str = "system:nodes") -> str:
    name = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(KEY, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def _bootstrap_identity(kube) -> list[str]:
    """A join token's identity (system:bootstrap:<id> in a bootstrappers group) with kubeadm's RBAC for it."""
    group = f"system:bootstrappers:{kube.unique('t')}"
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": kube.unique("csr-test-bootstrap")},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(binding), check=True)
    token_id = "".join(random.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=6))
    return [f"--as=system:bootstrap:{token_id}", "--as-group=system:bootstrappers", f"--as-group={group}",
            "--as-group=system:authenticated"]  # fmt: skip


def _create_csr(kube, identity: list[str], name: str, cn: str, o: str = "system:nodes") -> None:
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet", "request": _request(cn, o),
                     "usages": ["digital signature", "client auth"]}}  # fmt: skip
    kube.kubectl(*identity, "create", "-f", "-", input=json.dumps(body), check=True)


def _conditions(kube, name: str) -> list[str]:
    got = json.loads(kube.kubectl("get", "csr", name, "-o", "json", check=True).stdout)
    return [c["type"] for c in (got.get("status") or {}).get("conditions") or []]


def _approve_csrs(kube, tmp_path, running: list[str]) -> subprocess.CompletedProcess:
    from localcluster import binaries

    bin_dir, etc = tmp_path / "bin", tmp_path / "root/etc/kubernetes"
    bin_dir.mkdir()
    etc.mkdir(parents=True)
    (bin_dir / "kubectl").symlink_to(binaries.path("kubectl"))
    (bin_dir / "aws").write_text(FAKE_AWS)
    (bin_dir / "aws").chmod(0o755)
    (etc / "admin.conf").symlink_to(kube.admin_kubeconfig)
    (tmp_path / "running").write_text("".join(f"{n}\n" for n in running))
    script = f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\napprove_csrs\n"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CP_ROOT": str(tmp_path / "root"),
        "RUNNING": str(tmp_path / "running"),
        "HOME": str(tmp_path),  # kubectl's discovery cache
    }
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)


def test_the_approver_signs_only_a_running_instances_own_name(kube, tmp_path):
    identity = _bootstrap_identity(kube)
    running, stranger, joined = _ec2_name(), _ec2_name(), _ec2_name()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": joined}}
    kube.kubectl("create", "-f", "-", input=json.dumps(node), check=True)
    csrs = {k: kube.unique(f"csr-{k}") for k in ("running", "stranger", "joined", "masters")}
    _create_csr(kube, identity, csrs["running"], f"system:node:{running}")
    _create_csr(kube, identity, csrs["stranger"], f"system:node:{stranger}")  # no instance has this name
    _create_csr(kube, identity, csrs["joined"], f"system:node:{joined}")  # a Node of that name exists
    _create_csr(kube, identity, csrs["masters"], f"system:node:{running}", o="system:masters")
    got = json.loads(kube.kubectl("get", "csr", csrs["stranger"], "-o", "json", check=True).stdout)
    assert got["spec"]["username"].startswith("system:bootstrap:")  # as the API server recorded the requester

    done = _approve_csrs(kube, tmp_path, [running, joined])
    assert done.returncode == 0, done.stderr
    assert _conditions(kube, csrs["running"]) == ["Approved"]
    assert _conditions(kube, csrs["stranger"]) == ["Denied"]
    assert f"denying {csrs['stranger']}: no running instance {stranger} in us-west-2" in done.stderr
    assert _conditions(kube, csrs["joined"]) == ["Denied"]
    assert f"denying {csrs['joined']}: Node {joined} exists" in done.stderr
    assert _conditions(kube, csrs["masters"]) == ["Denied"]
    # a second request for the approved name is denied: the approval is remembered on the CSR (annotation)
    again = kube.unique("csr-again")
    _create_csr(kube, identity, again, f"system:node:{running}")
    (tmp_path / "again").mkdir()
    done = _approve_csrs(kube, tmp_path / "again", [running])
    assert _conditions(kube, again) == ["Denied"]
    assert f"denying {again}: {running} was approved before" in done.stderr


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
