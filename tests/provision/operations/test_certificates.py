"""`invoke certificates` and `invoke rotate-certificates` (provision/operations/certificates.py): the admin's
certificates and the revocation list found and reported soonest first, published (public parts only) into the
exporter's ConfigMap and the revocation list's rule, which promtool evaluates to RevocationListExpiresSoon; the
renewals (a researcher's VPN certificate, the revocation list imported into the endpoint, the Client VPN server
certificate re-imported at its ARN) against moto; kubeadm's renewal member by member."""

from __future__ import annotations

import datetime as dt
import subprocess

import boto3
import pytest
import yaml
from botocore.awsrequest import AWSResponse
from cryptography import x509
from moto import mock_aws

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision import monitoring
from provision.operations import certificates as certs
from provision.operations.ssm import Member, Result
from provision.users import VpnCa
from tests.support import ROOT, load_yaml, require_tool

NOW = dt.datetime.now(dt.UTC)
OK = AWSResponse("https://example.invalid", 200, {}, None)  # a short-circuited call's HTTP response


@pytest.fixture
def home(tmp_path):
    ca = VpnCa(tmp_path / "vpn-ca", "dlr")
    for user in ("alice", "bob"):
        _, cert, _ = ca.issue(user, "research.internal")
        (tmp_path / "users" / user).mkdir(parents=True)
        (tmp_path / "users" / user / "vpn-client.crt").write_bytes(cert)
    ca.write_crl()
    return tmp_path


def test_the_admins_certificates_and_the_revocation_list_are_found(home):
    entries = {e.name: e for e in certs.local_entries(load_spec(), home)}
    assert set(entries) == {"vpn-ca", "vpn-client/alice", "vpn-client/bob", "crl/client-vpn"}
    assert 364 <= entries["vpn-client/alice"].days_left(NOW) <= 366
    assert entries["vpn-client/alice"].renew == "invoke rotate-certificates --vpn-user alice"
    assert entries["crl/client-vpn"].pem is None and 179 <= entries["crl/client-vpn"].days_left(NOW) <= 181


def test_the_report_is_soonest_first_and_fails_within_the_warning(home):
    entries = certs.local_entries(load_spec(), home)
    lines, code = certs.report(entries, warn_days=30)
    assert code == 0 and lines[0].split()[3] == "crl/client-vpn" and lines[-1].split()[3] == "vpn-ca"
    lines, code = certs.report(entries, warn_days=400)
    assert code == 1 and lines[0].startswith("RENEW")


def test_publishing_writes_public_certificates_only_and_a_rule_promtool_fires_on(home, tmp_path):
    promtool = require_tool("promtool")
    out = tmp_path / "out"
    folder, rules = certs.publish_files(certs.local_entries(load_spec(), home), out)
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["vpn-ca.pem", "vpn-client-alice.pem", "vpn-client-bob.pem"]
    assert all(b"PRIVATE KEY" not in (folder / f).read_bytes() for f in files)
    config = monitoring.render(load_spec(), "arn:aws:sns:us-west-2:123456789012:dlr-alerts", None, rules.read_text(),
                               monitoring.watched(folder))  # fmt: skip
    cm = next(
        o for o in config if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "watched-certificates"
    )
    assert sorted(cm["data"]) == files and x509.load_pem_x509_certificate(cm["data"]["vpn-ca.pem"].encode())
    (tmp_path / "alerts.rules.yaml").write_text(monitoring.alert_rules(load_spec()))
    crl_at = load_yaml(rules)["groups"][0]["rules"][0]
    assert crl_at["record"] == "research_crl_next_update" and crl_at["labels"] == {"crl": "client-vpn"}
    stamp = int(crl_at["expr"].removeprefix("vector(").removesuffix(")"))
    crl = x509.load_pem_x509_crl((home / "vpn-ca/crl.pem").read_bytes())
    assert stamp == int(crl.next_update_utc.timestamp())
    # promtool evaluates from t=0: the same rule with a nextUpdate 25 days after it fires at once
    (tmp_path / "crl.rules.yaml").write_text(
        rules.read_text().replace(f"vector({stamp})", f"vector({25 * 86400})")
    )
    test = {
        "rule_files": ["crl.rules.yaml", "alerts.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [], "alert_rule_test": [
            {"eval_time": "2m", "alertname": "RevocationListExpiresSoon", "exp_alerts": [
                {"exp_labels": {"severity": "warning", "crl": "client-vpn"},
                 "exp_annotations": {"summary": "The revocation list client-vpn must be re-signed within 30 days",
                                     "description": "invoke rotate-certificates --crl re-signs it and imports it "
                                                    "into the Client VPN endpoint."}}]}]}],
    }  # fmt: skip
    (tmp_path / "crl.test.yaml").write_text(yaml.safe_dump(test))
    done = subprocess.run(
        [promtool, "test", "rules", "crl.test.yaml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_new_vpn_certificate_for_a_researcher(home):
    before = x509.load_pem_x509_certificate((home / "users/alice/vpn-client.crt").read_bytes())
    crt, key = certs.renew_vpn_user(load_spec(), "alice", home)
    after = x509.load_pem_x509_certificate(crt.read_bytes())
    assert after.serial_number != before.serial_number and oct(key.stat().st_mode & 0o777) == "0o600"


class ClientVpn:
    """moto has no Client VPN: DescribeClientVpnEndpoints and ImportClientVpnClientCertificateRevocationList
    answered by botocore hooks on the session (ACM stays moto's)."""

    def __init__(self, session, endpoint: dict):
        self.endpoint, self.imported = endpoint, []
        session.events.register("before-call.ec2.DescribeClientVpnEndpoints", self._describe)
        session.events.register(
            "before-call.ec2.ImportClientVpnClientCertificateRevocationList", self._import
        )

    def _describe(self, **_):
        return (OK, {"ClientVpnEndpoints": [self.endpoint]})

    def _import(self, params, **_):
        self.imported.append(
            {k: params["body"][k] for k in ("ClientVpnEndpointId", "CertificateRevocationList")}
        )
        return (OK, {"Return": True})


def _self_signed() -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    from provision.users import _key_pem, _pem

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vpn.research.internal")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(NOW).not_valid_after(NOW + dt.timedelta(days=20))
            .sign(key, hashes.SHA256()))  # fmt: skip
    return _pem(cert), _key_pem(key)


def _vpn(spec):
    session = boto3.Session(region_name="us-west-2")
    cert, key = _self_signed()
    arn = session.client("acm").import_certificate(Certificate=cert, PrivateKey=key)["CertificateArn"]
    endpoint = {"ClientVpnEndpointId": "cvpn-endpoint-0123456789abcdef0", "Description": "dlr-us-west-2-laptops",
                "ServerCertificateArn": arn, "Tags": [{"Key": "Name", "Value": "dlr-us-west-2-laptops"}],
                "AuthenticationOptions": [{"Type": "certificate-authentication",
                                           "MutualAuthentication": {"ClientRootCertificateChain": arn}}]}  # fmt: skip
    return session, ClientVpn(session, endpoint), arn


@mock_aws
def test_the_revocation_list_is_re_signed_and_imported_into_the_endpoint(home):
    spec = load_spec()
    session, vpn, _ = _vpn(spec)
    before = x509.load_pem_x509_crl((home / "vpn-ca/crl.pem").read_bytes()).last_update_utc
    path, used = certs.renew_crl(spec, home, session)
    assert used == "cvpn-endpoint-0123456789abcdef0"
    assert x509.load_pem_x509_crl(path.read_bytes()).last_update_utc >= before
    assert vpn.imported == [{"ClientVpnEndpointId": used, "CertificateRevocationList": path.read_text()}]


@mock_aws
def test_the_vpn_server_certificate_is_reissued_at_the_same_arn(home):
    spec = load_spec()
    session, _, arn = _vpn(spec)
    assert certs.renew_vpn_server(spec, home, session) == arn
    pem = session.client("acm").get_certificate(CertificateArn=arn)["Certificate"].encode()
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.issuer.rfc4514_string() == "CN=dlr client VPN CA" and cert.public_key().key_size == 2048
    assert 820 <= (cert.not_valid_after_utc - NOW).days <= 825
    session.events.register(
        "before-call.rolesanywhere.ListTrustAnchors", lambda **_: (OK, {"trustAnchors": []})
    )
    entries = {e.name: e for e in certs.aws_entries(spec, session)}
    assert entries["acm/client-vpn-server"].not_after == cert.not_valid_after_utc


@mock_aws
def test_no_endpoint_is_one_line(home):
    session = boto3.Session(region_name="us-west-2")
    session.events.register(
        "before-call.ec2.DescribeClientVpnEndpoints", lambda **_: (OK, {"ClientVpnEndpoints": []})
    )
    with pytest.raises(UserError, match="no Client VPN endpoint dlr-us-west-2-laptops"):
        certs.renew_vpn_server(load_spec(), home, session)


class Runner:
    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def run(self, ids, script, timeout_s=600, comment=""):
        self.calls.append(ids)
        (iid,) = ids
        bad = iid == self.fail
        out = "apiserver                  Dec 01, 2027 12:00 UTC   364d   ca   no\n"
        return {iid: Result(iid, "Failed" if bad else "Success", 1 if bad else 0, out, "x" if bad else "")}


def test_kubeadm_certificates_are_renewed_one_member_at_a_time_and_a_failure_stops_there():
    members = [Member(i, f"i-{i}", f"10.0.0.{i}") for i in range(3)]
    runner = Runner()
    certs.renew_kubeadm(runner, members, say=lambda _: None)
    assert runner.calls == [["i-0"], ["i-1"], ["i-2"]]
    runner = Runner(fail="i-1")
    with pytest.raises(UserError) as e:
        certs.renew_kubeadm(runner, members, say=lambda _: None)
    assert runner.calls == [["i-0"], ["i-1"]] and "not touched" in e.value.lines[-1]
    script = certs.renew_kubeadm_script()
    assert script.index("kubeadm certs renew all") < script.index('mv "$held"/*.yaml')


def test_the_renewal_script_is_shellcheck_clean(tmp_path):
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    path = tmp_path / "renew.sh"
    path.write_text("#!/bin/bash\n" + certs.renew_kubeadm_script())
    done = subprocess.run([shellcheck, "-S", "warning", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
