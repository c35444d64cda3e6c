"""invoke add-user / remove-user against the emulator: namespace, RBAC, claims, a kubeconfig whose client
certificate came through the CertificateSigningRequest API, and a VPN certificate from the local CA."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client, config

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import users
from tests.labctl.conftest import emu, s3_url  # noqa: F401 - fixtures
from tests.support import load_yaml

SPEC = load_spec()


def _researcher_bindings(emu) -> list[dict]:  # noqa: F811 - the emulator, not the fixture
    """ClusterRoleBindings beyond the API server's bootstrap policy (kubernetes.io/bootstrapping=rbac-defaults)."""
    return [b for b in emu.model.store.list("clusterrolebindings")
            if (b["metadata"].get("labels") or {}).get("kubernetes.io/bootstrapping") != "rbac-defaults"]  # fmt: skip


@pytest.fixture
def admin(emu, tmp_path: Path) -> str:  # noqa: F811
    return str(emu.write_kubeconfig(tmp_path / "admin.kubeconfig"))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_add_user_then_the_user_works_in_their_namespace(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    home = tmp_path / "home"
    added = users.add_user(SPEC, "alice", admin, home, timeout_s=5)
    assert added.namespace == "u-alice"
    assert set(added.created) == {"Namespace u-alice", "RoleBinding alice-edit", "ClusterRoleBinding research-view-alice",
                                  "PersistentVolumeClaim home", "PersistentVolumeClaim datasets",
                                  "PersistentVolumeClaim results", "PersistentVolumeClaim lab-home",
                                  "PersistentVolumeClaim lab-datasets", "PersistentVolumeClaim lab-results",
                                  "ResourceQuota researcher",
                                  "LimitRange researcher-defaults", "NetworkPolicy default-deny-ingress",
                                  "NetworkPolicy from-laptops"}  # fmt: skip
    with emu.model.lock:
        rb = emu.model.store.get("rolebindings", "u-alice", "alice-edit")
        crb = emu.model.store.get("clusterrolebindings", None, "research-view-alice")
        pvc = emu.model.store.get("persistentvolumeclaims", "u-alice", "home")
    assert (rb["roleRef"]["name"], crb["roleRef"]["name"]) == ("edit", "research-viewer")
    assert rb["subjects"] == [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]
    assert pvc["spec"]["volumeName"] == "u-alice-home" and pvc["spec"]["storageClassName"] == ""

    # the kubeconfig: private, the user's namespace, a certificate the cluster's CA signed for CN=alice
    assert _mode(added.kubeconfig) == 0o600 and _mode(added.kubeconfig.parent) == 0o700
    doc = load_yaml(added.kubeconfig)
    assert doc["contexts"][0]["context"]["namespace"] == "u-alice"
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(doc["users"][0]["user"]["client-certificate-data"])
    )
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == users.USERS_GROUP
    assert cert.issuer == emu.api.pki.ca_cert.subject
    cert.verify_directly_issued_by(emu.api.pki.ca_cert)
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
    assert client.CoreV1Api(api).list_namespaced_pod("u-alice").items == []
    api.close()

    # the VPN certificate: from the local CA, client auth, key private, CA outside the repository
    vpn = x509.load_pem_x509_certificate(added.vpn_cert.read_bytes())
    ca = x509.load_pem_x509_certificate((home / "vpn-ca" / "ca.crt").read_bytes())
    vpn.verify_directly_issued_by(ca)
    assert _mode(added.vpn_key) == 0o600 and _mode(home / "vpn-ca" / "ca.key") == 0o600
    assert not str(home).startswith(str(Path(users.__file__).resolve().parents[1]))


def test_the_s3_role_goes_on_the_default_service_account(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    arn = "arn:aws:iam::123456789012:role/dlr-researcher-alice"
    added = users.add_user(SPEC, "alice", admin, tmp_path, timeout_s=5, role_arn=arn)
    assert f"S3 role {arn} on ServiceAccount default" in added.created
    with emu.model.lock:
        sa = emu.model.store.get("serviceaccounts", "u-alice", "default")
    assert sa["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": arn}


def test_add_user_twice_keeps_what_exists(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    users.add_user(SPEC, "bob", admin, tmp_path, timeout_s=5)
    again = users.add_user(SPEC, "bob", admin, tmp_path, timeout_s=5)
    assert again.created == []


def test_unknown_user_is_one_line_and_creates_nothing(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    with pytest.raises(UserError) as e:
        users.add_user(SPEC, "mallory", admin, tmp_path)
    assert e.value.lines == [
        "cluster.yaml: users: no user 'mallory' (listed: alice, bob); add them with their uid and ssh_keys first"
    ]
    with emu.model.lock:
        assert (
            emu.model.store.list("rolebindings", "u-alice") == []
            and emu.model.store.list("certificatesigningrequests") == []
        )


def test_remove_user_deletes_access_and_revokes_the_vpn_certificate(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    added = users.add_user(SPEC, "alice", admin, tmp_path, timeout_s=5)
    serial = x509.load_pem_x509_certificate(added.vpn_cert.read_bytes()).serial_number
    done = users.remove_user(SPEC, "alice", admin, tmp_path)
    assert done[:3] == [
        "ClusterRoleBinding research-view-alice",
        "RoleBinding u-alice/alice-edit",
        "Namespace u-alice",
    ]
    with emu.model.lock:
        assert emu.model.store.list("rolebindings", "u-alice") == [] and _researcher_bindings(emu) == []
        assert (
            emu.model.store.list("persistentvolumeclaims") == []
            and emu.model.store.list("certificatesigningrequests") == []
        )
    crl = x509.load_pem_x509_crl((tmp_path / "vpn-ca" / "crl.pem").read_bytes())
    assert crl.get_revoked_certificate_by_serial_number(serial) is not None
    ca = x509.load_pem_x509_certificate((tmp_path / "vpn-ca" / "ca.crt").read_bytes())
    assert crl.is_signature_valid(ca.public_key())


def test_the_signer_refuses_usages_a_client_certificate_may_not_have(emu, admin) -> None:  # noqa: F811
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "eve")])).sign(key, hashes.SHA256())  # fmt: skip
    api = config.new_client_from_config(admin)
    certs = client.CertificatesV1Api(api)
    body = {"metadata": {"name": "eve"}, "spec": {"request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
            "signerName": users.SIGNER, "usages": ["server auth"]}}  # fmt: skip
    certs.create_certificate_signing_request(body)
    obj = certs.read_certificate_signing_request("eve")
    obj.status = client.V1CertificateSigningRequestStatus(
        conditions=[client.V1CertificateSigningRequestCondition(type="Approved", status="True")]
    )
    certs.replace_certificate_signing_request_approval("eve", obj)
    status = certs.read_certificate_signing_request("eve").status
    assert status.certificate is None
    assert [c.type for c in status.conditions] == ["Approved", "Failed"]
    with pytest.raises(client.exceptions.ApiException) as e:
        certs.create_certificate_signing_request(
            {
                "metadata": {"name": "junk"},
                "spec": {"request": "bm90IGEgY3Ny", "signerName": users.SIGNER, "usages": ["client auth"]},
            }
        )
    assert e.value.status == 422
    api.close()


def test_remove_user_task_dry_run_and_confirmation(emu, admin, tmp_path: Path, capsys, monkeypatch) -> None:  # noqa: F811
    from invoke import Context
    from invoke.exceptions import Exit

    import tasks

    users.add_user(SPEC, "alice", admin, tmp_path, timeout_s=5)
    tasks.remove_user(Context(), "alice", kubeconfig=admin, home=str(tmp_path), dry_run=True)
    out = capsys.readouterr().out
    assert "Namespace u-alice" in out and out.rstrip().endswith("dry run: nothing changed")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(Exit) as e:
        tasks.remove_user(Context(), "alice", kubeconfig=admin, home=str(tmp_path))
    assert e.value.code == 2
    assert (
        capsys.readouterr().err
        == "remove-user alice: no terminal to confirm on; pass --yes to proceed unattended\n"
    )
    with emu.model.lock:
        assert len(emu.model.store.list("rolebindings", "u-alice")) == 1  # nothing removed
    tasks.remove_user(Context(), "alice", kubeconfig=admin, home=str(tmp_path), yes=True)
    with emu.model.lock:
        assert emu.model.store.list("rolebindings", "u-alice") == []


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


def test_add_user_gives_the_researcher_an_aws_identity_for_lab_submit(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    """Issue 36: the VPN certificate (CN = the user, which Roles Anywhere makes the session tag naming their prefix)
    and an AWS profile whose credential_process trades it for the laptop role's credentials."""
    added = users.add_user(SPEC, "alice", admin, tmp_path, timeout_s=5, access=ACCESS)
    vpn = x509.load_pem_x509_certificate(added.vpn_cert.read_bytes())
    assert vpn.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    text = added.aws_config.read_text()
    assert text.startswith(
        "[profile dlr]\nregion = us-west-2\ncredential_process = aws_signing_helper credential-process "
    )
    for arn in ACCESS.values():
        assert arn in text
    assert "--certificate ~/.config/research-cluster/vpn-client.crt" in text and "PRIVATE KEY" not in text
    none = users.add_user(SPEC, "bob", admin, tmp_path, timeout_s=5, access={})  # no trust anchor yet
    assert none.aws_config is None


def test_remove_user_unbinds_and_revokes_aws_credentials(emu, admin, tmp_path, monkeypatch) -> None:  # noqa: F811
    import boto3
    from botocore.stub import ANY, Stubber
    from kubernetes.client.exceptions import ApiException

    users.add_user(SPEC, "alice", admin, tmp_path, timeout_s=5, access=ACCESS)
    alice = config.new_client_from_config(config_file=str(emu.write_kubeconfig(
        tmp_path / "alice", user="alice", groups=(users.USERS_GROUP,))))  # fmt: skip
    core = client.CoreV1Api(alice)
    core.read_namespaced_config_map("research-lab-settings", "kube-public")  # a researcher reads the settings
    ra = boto3.client("rolesanywhere", region_name="us-west-2")
    stub = Stubber(ra)
    stub.add_response("list_crls", {"crls": []})
    stub.add_response("import_crl", {"crl": {"crlId": "c0ffee00-0000-0000-0000-000000000000"}},
                      {"name": "dlr-researchers", "crlData": ANY, "trustAnchorArn": ACCESS["trust_anchor_arn"],
                       "enabled": True})  # fmt: skip
    monkeypatch.setattr(boto3, "client", lambda *a, **k: ra)
    with stub:
        done = users.remove_user(SPEC, "alice", admin, tmp_path, access=ACCESS)
    stub.assert_no_pending_responses()
    assert "alice out of the lab settings' readers" in done
    assert done[-1].startswith(
        f"imported the revocation list for the trust anchor {ACCESS['trust_anchor_arn']}"
    )
    with pytest.raises(ApiException) as e:  # still research:users by certificate, no longer a reader
        core.read_namespaced_config_map("research-lab-settings", "kube-public")
    assert e.value.status == 403
    bob = config.new_client_from_config(config_file=str(emu.write_kubeconfig(
        tmp_path / "bob", user="bob", groups=(users.USERS_GROUP,))))  # fmt: skip
    client.CoreV1Api(bob).read_namespaced_config_map("research-lab-settings", "kube-public")


def test_an_operator_gets_their_own_short_lived_identity(emu, admin, tmp_path: Path) -> None:  # noqa: F811
    """Issue 36: CN = the operator, O = research:operators (bound to cluster-admin), valid hours, not a year;
    the admin kubeconfig only approved it."""
    import datetime as dt

    path = users.operator_kubeconfig(SPEC, "jdoe", admin, tmp_path / "jdoe.conf", hours=8, timeout_s=5)
    assert _mode(path) == 0o600
    doc = load_yaml(path)
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(doc["users"][0]["user"]["client-certificate-data"])
    )
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "jdoe"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == users.OPERATORS_GROUP
    assert cert.not_valid_after_utc - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=8, minutes=1)
    api = config.new_client_from_config(str(path))
    assert client.CoreV1Api(api).list_namespaced_secret("kube-system") is not None  # cluster-admin
    api.close()
    with pytest.raises(UserError, match="lasts 1 to 12 hours"):
        users.operator_kubeconfig(SPEC, "jdoe", admin, tmp_path / "x.conf", hours=24)
    with pytest.raises(UserError, match="not a researcher's"):
        users.operator_kubeconfig(SPEC, "alice", admin, tmp_path / "x.conf")
