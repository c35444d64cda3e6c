"""Authentication and RBAC as kube-apiserver does them, held to kubectl: the admin kubeconfig is system:masters
(kubeadm's admin.conf), a client certificate of the cluster CA is its CN in its O groups, a ServiceAccount token is
its ServiceAccount; every request is authorized against the stored Roles and bindings with the API server's
messages (responsewriters.forbiddenMessage); `kubectl auth can-i` (SelfSubjectAccessReview, SelfSubjectRulesReview)
and `kubectl auth whoami` (SelfSubjectReview) work; impersonation needs `impersonate`; RBAC refuses escalation; the
kube-apiserver-client signer refuses system:masters."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock

KUBECTL = "/usr/bin/kubectl"
pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")


@pytest.fixture
def cluster(tmp_path):
    with Emulator(ClusterModel(VirtualClock(start=1_767_225_600.0)), namespaces=("u-alice",)) as emu:
        admin = str(emu.write_kubeconfig(tmp_path / "admin"))
        alice = str(emu.write_kubeconfig(tmp_path / "alice", user="alice", groups=("research:users",),
                                         namespace="u-alice"))  # fmt: skip

        def kubectl(kubeconfig, *args, input=None, check=True):
            out = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True,
                                 input=input, timeout=60)  # fmt: skip
            if check:
                assert out.returncode == 0, out.stderr
            return out

        yield emu, kubectl, admin, alice


def test_the_admin_kubeconfig_is_system_masters(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    who = json.loads(kubectl(admin, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert who == {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
    assert kubectl(admin, "auth", "can-i", "*", "*").stdout.strip() == "yes"


def test_a_user_without_bindings_is_refused_with_the_api_servers_message(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    who = json.loads(kubectl(alice, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert who == {"username": "alice", "groups": ["research:users", "system:authenticated"]}
    out = kubectl(alice, "get", "pods", check=False)
    assert out.returncode == 1
    assert out.stderr.strip() == ('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource '
                                  '"pods" in API group "" in the namespace "u-alice"')  # fmt: skip
    out = kubectl(alice, "get", "nodes", "n1", check=False)
    assert (
        'nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope'
        in out.stderr
    )
    assert kubectl(alice, "auth", "can-i", "list", "pods", check=False).stdout.strip() == "no"


def test_a_role_binding_grants_its_namespace_only(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-edit", "namespace": "u-alice"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}))  # fmt: skip
    assert kubectl(alice, "auth", "can-i", "create", "jobs.batch").stdout.strip() == "yes"
    assert (
        kubectl(alice, "auth", "can-i", "create", "jobs.batch", "-n", "default", check=False).stdout.strip()
        == "no"
    )
    assert kubectl(alice, "auth", "can-i", "create", "rolebindings", check=False).stdout.strip() == "no", (
        "edit is not admin"
    )
    listed = kubectl(alice, "auth", "can-i", "--list").stdout
    assert "jobs.batch" in listed and "selfsubjectaccessreviews.authorization.k8s.io" in listed
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert "configmap/c created" in kubectl(alice, "apply", "-f", "-", input=yaml.safe_dump(cm)).stdout


def test_rbac_refuses_escalation(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-admin", "namespace": "u-alice"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}))  # fmt: skip
    grab = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "grab", "namespace": "u-alice"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}  # fmt: skip
    out = kubectl(alice, "apply", "-f", "-", input=yaml.safe_dump(grab), check=False)
    assert out.returncode == 1
    assert (
        'rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "alice" (groups=["research:users" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:'
    ) in out.stderr
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in out.stderr


def test_impersonation_needs_the_impersonate_verb(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    out = kubectl(admin, "get", "pods", "-n", "default", "--as=alice", check=False)
    assert 'User "alice" cannot list resource "pods"' in out.stderr
    who = json.loads(kubectl(admin, "auth", "whoami", "-o", "json", "--as=bob", "--as-group=team").stdout)
    assert who["status"]["userInfo"] == {"username": "bob", "groups": ["team", "system:authenticated"]}
    out = kubectl(alice, "get", "pods", "--as=bob", check=False)
    assert (
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the '
        "cluster scope"
    ) in out.stderr


def test_service_account_tokens_authenticate_as_their_service_account(cluster, tmp_path) -> None:
    emu, kubectl, admin, alice = cluster
    kubectl(admin, "create", "serviceaccount", "runner", "-n", "u-alice", check=False)
    kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump({"apiVersion": "v1", "kind": "ServiceAccount",
                                                              "metadata": {"name": "runner", "namespace": "u-alice"}}))  # fmt: skip
    token = kubectl(admin, "create", "token", "runner", "-n", "u-alice", "--duration=1h").stdout.strip()
    kc = str(emu.write_token_kubeconfig(tmp_path / "sa", token, namespace="u-alice"))
    who = json.loads(kubectl(kc, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert who["username"] == "system:serviceaccount:u-alice:runner"
    assert who["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:u-alice",
        "system:authenticated",
    ]
    out = kubectl(kc, "get", "secrets", check=False)
    assert (
        'secrets is forbidden: User "system:serviceaccount:u-alice:runner" cannot list resource "secrets" in API '
        'group "" in the namespace "u-alice"'
    ) in out.stderr
    short = kubectl(admin, "create", "token", "runner", "-n", "u-alice", "--duration=5m", check=False)
    assert "may not specify a duration less than 10 minutes" in short.stderr
    kubectl(admin, "delete", "serviceaccount", "runner", "-n", "u-alice")
    assert "Unauthorized" in kubectl(kc, "get", "pods", check=False).stderr, (
        "a token of a deleted ServiceAccount"
    )


def test_anonymous_and_bad_tokens(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    ctx = ssl.create_default_context(cadata=emu.api.pki.ca_pem.decode())

    def get(path, token=None):
        req = urllib.request.Request(
            emu.secure_url + path, headers={"Authorization": f"Bearer {token}"} if token else {}
        )
        try:
            with urllib.request.urlopen(req, context=ctx) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    assert get("/healthz")[0] == 200  # system:public-info-viewer for system:unauthenticated
    code, body = get("/api/v1/namespaces/default/pods")
    assert code == 403 and body["message"] == ('pods is forbidden: User "system:anonymous" cannot list resource "pods" '
                                               'in API group "" in the namespace "default"')  # fmt: skip
    code, body = get("/api/v1/pods", token="not-a-token")
    assert (code, body["reason"]) == (401, "Unauthorized")


def _csr(cn: str, orgs: list[str]) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs] + [
        x509.NameAttribute(NameOID.COMMON_NAME, cn)
    ]
    req = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs)).sign(key, hashes.SHA256())
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


def test_the_client_signer_refuses_system_masters_and_approval_needs_the_signer(cluster) -> None:
    emu, kubectl, admin, alice = cluster
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "x"},
           "spec": {"request": _csr("mallory", ["system:masters"]), "signerName": "kubernetes.io/kube-apiserver-client",
                    "usages": ["client auth"]}}  # fmt: skip
    out = kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump(csr), check=False)
    assert (
        "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    ) in out.stderr
    csr["spec"]["request"] = _csr("carol", ["research:users"])
    kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump(csr))
    spec = json.loads(kubectl(admin, "get", "csr", "x", "-o", "json").stdout)["spec"]
    assert (spec["username"], spec["groups"]) == (
        "kubernetes-admin",
        ["system:masters", "system:authenticated"],
    )
    kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "alice-csr"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "alice-csr"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}))  # fmt: skip
    kubectl(admin, "apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "alice-csr"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests",
                   "certificatesigningrequests/approval"], "verbs": ["get", "update"]}]}))  # fmt: skip
    out = kubectl(alice, "certificate", "approve", "x", check=False)
    assert (
        'user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"'
        in out.stderr
    )
    kubectl(admin, "certificate", "approve", "x")
    cert = json.loads(kubectl(admin, "get", "csr", "x", "-o", "json").stdout)["status"]["certificate"]
    issued = x509.load_pem_x509_certificate(base64.b64decode(cert))
    assert issued.subject.rfc4514_string() == "CN=carol,O=research:users"
    issued.verify_directly_issued_by(emu.api.pki.ca_cert)
