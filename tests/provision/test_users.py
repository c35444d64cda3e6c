"""invoke add-user / remove-user on the shared real control plane (the `kube` fixture): namespace, RBAC, claims, a
kubeconfig whose client certificate came through the CertificateSigningRequest API (kube-controller-manager's
signer, the cluster's CA), and a VPN certificate from the local CA. Each test's researchers live under a namespace
prefix of its own; a test that removes a researcher removes one of its own name (their ClusterRoleBinding is named
for the user, cluster-wide)."""

from __future__ import annotations

import base64
import json
import stat
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client, config

from clusterspec.errors import UserError
from clusterspec.loader import DEFAULT_SPEC, load_spec
from provision import users
from tests.support import load_yaml

pytestmark = pytest.mark.tool
BASE = load_spec()


@pytest.fixture
def admin(kube) -> str:
    return str(kube.admin_kubeconfig)


@pytest.fixture
def spec(kube):
    """The spec with a namespace prefix of this test's own."""
    return BASE.model_copy(update={"researchers": BASE.researchers.model_copy(
        update={"namespace_prefix": kube.unique("u") + "-"})})  # fmt: skip


def _with_user(spec, kube):
    """(spec with a researcher of this test's own name, the name)."""
    from clusterspec.spec import User

    name = kube.unique("r").replace("-", "")
    return spec.model_copy(update={"users": [*spec.users, User(name=name, uid=4321, ssh_keys=[])]}), name


def _get(kube, *args: str) -> dict | None:
    done = kube.kubectl("get", *args, "-o", "json")
    return json.loads(done.stdout) if done.returncode == 0 else None


def _csrs(kube, user: str) -> list[dict]:
    return _get(kube, "csr", "-l", f"{users.USER_LABEL}={user}")["items"]


def _gone(kube, *args: str, timeout_s: float = 60) -> bool:
    """Until ``kubectl get ARGS`` finds nothing (the namespace controller deletes in its own time)."""
    deadline = time.monotonic() + timeout_s
    while _get(kube, *args) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.3)
    return True


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_add_user_then_the_user_works_in_their_namespace(kube, spec, admin, tmp_path: Path) -> None:
    home = tmp_path / "home"
    added = users.add_user(spec, "alice", admin, home, timeout_s=60)
    ns = added.namespace
    assert ns == spec.researchers.namespace_prefix + "alice"
    created = set(added.created) - {
        "ClusterRoleBinding research-view-alice"
    }  # whichever test came first made it
    assert created == {f"Namespace {ns}", "RoleBinding alice-edit",
                       "PersistentVolumeClaim home", "PersistentVolumeClaim datasets",
                       "PersistentVolumeClaim results", "PersistentVolumeClaim lab-home",
                       "PersistentVolumeClaim lab-datasets", "PersistentVolumeClaim lab-results",
                       "ResourceQuota researcher",
                       "LimitRange researcher-defaults", "NetworkPolicy default-deny-ingress",
                       "NetworkPolicy from-laptops"}  # fmt: skip
    rb = _get(kube, "-n", ns, "rolebinding", "alice-edit")
    crb = _get(kube, "clusterrolebinding", "research-view-alice")
    pvc = _get(kube, "-n", ns, "pvc", "home")
    assert (rb["roleRef"]["name"], crb["roleRef"]["name"]) == ("edit", "research-viewer")
    assert rb["subjects"] == [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]
    assert pvc["spec"]["volumeName"] == f"{ns}-home" and pvc["spec"]["storageClassName"] == ""

    # the kubeconfig: private, the user's namespace, a certificate the cluster's CA signed for CN=alice
    assert _mode(added.kubeconfig) == 0o600 and _mode(added.kubeconfig.parent) == 0o700
    doc = load_yaml(added.kubeconfig)
    assert doc["contexts"][0]["context"]["namespace"] == ns
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(doc["users"][0]["user"]["client-certificate-data"])
    )
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == users.USERS_GROUP
    cluster_ca = x509.load_pem_x509_certificate((kube.workdir / "pki" / "ca.crt").read_bytes())
    assert cert.issuer == cluster_ca.subject  # kube-controller-manager signed it with the cluster's CA
    cert.verify_directly_issued_by(cluster_ca)
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH
        in cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    key = serialization.load_pem_private_key(
        base64.b64decode(doc["users"][0]["user"]["client-key-data"]), None
    )
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()
    # the kubeconfig works: the official client lists pods in the user's namespace through it
    api = config.new_client_from_config(str(added.kubeconfig))
    assert client.CoreV1Api(api).list_namespaced_pod(ns).items == []
    api.close()

    # the VPN certificate: from the local CA, client auth, key private, CA outside the repository
    vpn = x509.load_pem_x509_certificate(added.vpn_cert.read_bytes())
    ca = x509.load_pem_x509_certificate((home / "vpn-ca" / "ca.crt").read_bytes())
    vpn.verify_directly_issued_by(ca)
    assert _mode(added.vpn_key) == 0o600 and _mode(home / "vpn-ca" / "ca.key") == 0o600
    assert not str(home).startswith(str(Path(users.__file__).resolve().parents[1]))


def test_the_s3_role_goes_on_the_default_service_account(kube, spec, admin, tmp_path: Path) -> None:
    """On the ServiceAccount the real controller-manager makes in a new namespace."""
    arn = "arn:aws:iam::123456789012:role/dlr-researcher-alice"
    added = users.add_user(spec, "alice", admin, tmp_path, timeout_s=60, role_arn=arn)
    assert f"S3 role {arn} on ServiceAccount default" in added.created
    sa = _get(kube, "-n", added.namespace, "serviceaccount", "default")
    assert sa["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": arn}


def test_add_user_twice_keeps_what_exists(spec, admin, tmp_path: Path) -> None:
    users.add_user(spec, "bob", admin, tmp_path, timeout_s=60)
    again = users.add_user(spec, "bob", admin, tmp_path, timeout_s=60)
    assert again.created == []


def test_unknown_user_is_one_line_and_creates_nothing(kube, spec, admin, tmp_path: Path) -> None:
    with pytest.raises(UserError) as e:
        users.add_user(spec, "mallory", admin, tmp_path)
    assert e.value.lines == [
        "cluster.yaml: users: no user 'mallory' (listed: alice, bob); add them with their uid and ssh_keys first"
    ]
    assert _get(kube, "namespace", spec.researchers.namespace("mallory")) is None
    assert _csrs(kube, "mallory") == []


def test_remove_user_deletes_access_and_revokes_the_vpn_certificate(
    kube, spec, admin, tmp_path: Path
) -> None:
    spec, user = _with_user(spec, kube)
    added = users.add_user(spec, user, admin, tmp_path, timeout_s=60)
    ns = added.namespace
    assert _csrs(kube, user) and _get(kube, "clusterrolebinding", f"research-view-{user}")
    serial = x509.load_pem_x509_certificate(added.vpn_cert.read_bytes()).serial_number
    done = users.remove_user(spec, user, admin, tmp_path)
    assert done[:3] == [f"ClusterRoleBinding research-view-{user}", f"RoleBinding {ns}/{user}-edit",
                        f"Namespace {ns}"]  # fmt: skip
    assert _get(kube, "clusterrolebinding", f"research-view-{user}") is None and _csrs(kube, user) == []
    assert _get(kube, "-n", ns, "rolebinding", f"{user}-edit") is None
    # the namespace controller deletes its claims, then the namespace (no pod uses a claim: nothing holds it)
    assert _gone(kube, "namespace", ns), _get(kube, "-n", ns, "pvc")
    crl = x509.load_pem_x509_crl((tmp_path / "vpn-ca" / "crl.pem").read_bytes())
    assert crl.get_revoked_certificate_by_serial_number(serial) is not None
    ca = x509.load_pem_x509_certificate((tmp_path / "vpn-ca" / "ca.crt").read_bytes())
    assert crl.is_signature_valid(ca.public_key())


def test_the_signer_refuses_usages_a_client_certificate_may_not_have(kube, admin) -> None:
    """kube-controller-manager's kubernetes.io/kube-apiserver-client signer fails an approved request for server
    auth; kube-apiserver's validation refuses a request that is not a CSR (422)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "eve")])).sign(key, hashes.SHA256())  # fmt: skip
    api = config.new_client_from_config(admin)
    certs = client.CertificatesV1Api(api)
    eve = kube.unique("eve")
    body = {"metadata": {"name": eve}, "spec": {"request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
            "signerName": users.SIGNER, "usages": ["server auth"]}}  # fmt: skip
    certs.create_certificate_signing_request(body)
    try:
        obj = certs.read_certificate_signing_request(eve)
        obj.status = client.V1CertificateSigningRequestStatus(
            conditions=[client.V1CertificateSigningRequestCondition(type="Approved", status="True")]
        )
        certs.replace_certificate_signing_request_approval(eve, obj)
        deadline = time.monotonic() + 30
        while len((status := certs.read_certificate_signing_request(eve).status).conditions) < 2:
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        assert status.certificate is None
        assert [c.type for c in status.conditions] == ["Approved", "Failed"]
        with pytest.raises(client.exceptions.ApiException) as e:
            certs.create_certificate_signing_request(
                {
                    "metadata": {"name": kube.unique("junk")},
                    "spec": {
                        "request": "bm90IGEgY3Ny",
                        "signerName": users.SIGNER,
                        "usages": ["client auth"],
                    },
                }
            )
        assert e.value.status == 422
    finally:
        certs.delete_certificate_signing_request(eve)
        api.close()


def test_remove_user_task_dry_run_and_confirmation(
    kube, spec, admin, tmp_path: Path, capsys, monkeypatch
) -> None:
    import yaml
    from invoke import Context
    from invoke.exceptions import Exit

    import tasks

    spec, user = _with_user(spec, kube)
    ns = spec.researchers.namespace(user)
    data = load_yaml(Path(DEFAULT_SPEC))  # the same spec as a file, as `invoke remove-user --spec` reads one
    data["researchers"]["namespace_prefix"] = spec.researchers.namespace_prefix
    data["users"].append({"name": user, "uid": 4321, "ssh_keys": []})
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    users.add_user(spec, user, admin, tmp_path, timeout_s=60)
    tasks.remove_user(Context(), user, kubeconfig=admin, home=str(tmp_path), dry_run=True, spec=str(path))
    out = capsys.readouterr().out
    assert f"Namespace {ns}" in out and out.rstrip().endswith("dry run: nothing changed")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(Exit) as e:
        tasks.remove_user(Context(), user, kubeconfig=admin, home=str(tmp_path), spec=str(path))
    assert e.value.code == 2
    assert (
        capsys.readouterr().err
        == f"remove-user {user}: no terminal to confirm on; pass --yes to proceed unattended\n"
    )
    assert len(_get(kube, "-n", ns, "rolebinding")["items"]) == 1  # nothing removed
    tasks.remove_user(Context(), user, kubeconfig=admin, home=str(tmp_path), yes=True, spec=str(path))
    assert _get(kube, "-n", ns, "rolebinding", f"{user}-edit") is None
    assert _get(kube, "clusterrolebinding", f"research-view-{user}") is None


def test_the_revocation_list_goes_to_the_client_vpn_endpoint(tmp_path: Path, monkeypatch) -> None:
    import boto3
    from botocore.stub import Stubber

    ca = users.VpnCa(tmp_path / "ca", "dlr")
    ca.issue("alice", "research.internal")
    ca.revoke("alice")
    ec2 = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    stub.add_response(
        "import_client_vpn_client_certificate_revocation_list",
        {"Return": True},
        {
            "ClientVpnEndpointId": "cvpn-endpoint-0123456789abcdef0",
            "CertificateRevocationList": ca.crl_path.read_text(),
        },
    )
    monkeypatch.setattr(boto3, "client", lambda *a, **k: ec2)
    with stub:
        users.import_crl(ca.crl_path, "cvpn-endpoint-0123456789abcdef0", "us-west-2")
    stub.assert_no_pending_responses()


ACCESS = {
    "trust_anchor_arn": "arn:aws:rolesanywhere:us-west-2:123456789012:trust-anchor/0123abcd-0000-0000-0000-000000000000",
    "profile_arn": "arn:aws:rolesanywhere:us-west-2:123456789012:profile/4567ef00-0000-0000-0000-000000000000",
    "role_arn": "arn:aws:iam::123456789012:role/dlr-researcher-laptop",
}


def test_add_user_gives_the_researcher_an_aws_identity_for_lab_submit(spec, admin, tmp_path: Path) -> None:
    """Issue 36: the VPN certificate (CN = the user, which Roles Anywhere makes the session tag naming their prefix)
    and an AWS profile whose credential_process trades it for the laptop role's credentials."""
    added = users.add_user(spec, "alice", admin, tmp_path, timeout_s=60, access=ACCESS)
    vpn = x509.load_pem_x509_certificate(added.vpn_cert.read_bytes())
    assert vpn.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    text = added.aws_config.read_text()
    assert text.startswith(
        "[profile dlr]\nregion = us-west-2\ncredential_process = aws_signing_helper credential-process "
    )
    for arn in ACCESS.values():
        assert arn in text
    assert "--certificate ~/.config/research-cluster/vpn-client.crt" in text and "PRIVATE KEY" not in text
    none = users.add_user(spec, "bob", admin, tmp_path, timeout_s=60, access={})  # no trust anchor yet
    assert none.aws_config is None


def test_remove_user_unbinds_and_revokes_aws_credentials(kube, spec, admin, tmp_path, monkeypatch) -> None:
    """The removed researcher's own certificate (still research:users) is refused the settings by the real RBAC;
    bob's, from his own add-user, still reads them. The settings are the cluster's one: held while it runs."""
    import boto3
    from botocore.stub import ANY, Stubber
    from kubernetes.client.exceptions import ApiException

    spec, user = _with_user(spec, kube)
    with kube.singleton("lab-settings"):
        added = users.add_user(spec, user, admin, tmp_path, timeout_s=60, access=ACCESS)
        bob_added = users.add_user(spec, "bob", admin, tmp_path, timeout_s=60, access=ACCESS)
        alice = config.new_client_from_config(config_file=str(added.kubeconfig))
        bob = config.new_client_from_config(config_file=str(bob_added.kubeconfig))
        core = client.CoreV1Api(alice)
        core.read_namespaced_config_map(
            "research-lab-settings", "kube-public"
        )  # a researcher reads the settings
        ra = boto3.client("rolesanywhere", region_name="us-west-2")
        stub = Stubber(ra)
        stub.add_response("list_crls", {"crls": []})
        stub.add_response("import_crl", {"crl": {"crlId": "c0ffee00-0000-0000-0000-000000000000"}},
                          {"name": "dlr-researchers", "crlData": ANY, "trustAnchorArn": ACCESS["trust_anchor_arn"],
                           "enabled": True})  # fmt: skip
        monkeypatch.setattr(boto3, "client", lambda *a, **k: ra)
        with stub:
            done = users.remove_user(spec, user, admin, tmp_path, access=ACCESS)
        stub.assert_no_pending_responses()
        assert f"{user} out of the lab settings' readers" in done
        assert done[-1].startswith(
            f"imported the revocation list for the trust anchor {ACCESS['trust_anchor_arn']}"
        )
        with pytest.raises(ApiException) as e:  # still research:users by certificate, no longer a reader
            core.read_namespaced_config_map("research-lab-settings", "kube-public")
        assert e.value.status == 403
        client.CoreV1Api(bob).read_namespaced_config_map("research-lab-settings", "kube-public")
    alice.close()
    bob.close()


def test_an_operator_gets_their_own_short_lived_identity(kube, admin, tmp_path: Path) -> None:
    """Issue 36: CN = the operator, O = research:operators (bound to cluster-admin), valid hours, not a year;
    the admin kubeconfig only approved it."""
    import datetime as dt

    jdoe = kube.unique("jdoe")
    path = users.operator_kubeconfig(BASE, jdoe, admin, tmp_path / "jdoe.conf", hours=8, timeout_s=60)
    assert _mode(path) == 0o600
    doc = load_yaml(path)
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(doc["users"][0]["user"]["client-certificate-data"])
    )
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == jdoe
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == users.OPERATORS_GROUP
    assert cert.not_valid_after_utc - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=8, minutes=1)
    api = config.new_client_from_config(str(path))
    assert client.CoreV1Api(api).list_namespaced_secret("kube-system") is not None  # cluster-admin
    api.close()
    with pytest.raises(UserError, match="lasts 1 to 12 hours"):
        users.operator_kubeconfig(BASE, jdoe, admin, tmp_path / "x.conf", hours=24)
    with pytest.raises(UserError, match="not a researcher's"):
        users.operator_kubeconfig(BASE, "alice", admin, tmp_path / "x.conf")
