"""Node identity (issue 36): the control plane's `approve-csrs`, run as bootstrap.sh defines it against fakes of
kubectl and aws, with real certificate requests (data/csr_approver_cases.yaml); and kubeadm's blanket
auto-approval binding deleted on every run."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, load_yaml

HERE = ROOT / "tests/provision/terraform"
CASES = load_yaml(HERE / "data/csr_approver_cases.yaml")
BOOTSTRAP = MODULES / "control_plane/scripts/bootstrap.sh"
KEY = ec.generate_private_key(ec.SECP256R1())
KUBELET_USAGES = ["digital signature", "client auth"]


def _request(cn: str, o: str) -> str:
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{cn}")])  # fmt: skip
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(KEY, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def _csr(c: dict) -> dict:
    obj = {
        "metadata": {"name": c["name"]},
        "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                 "username": c.get("username", "system:bootstrap:abcdef"),
                 "usages": c.get("usages", KUBELET_USAGES), "request": _request(c["cn"], c.get("o", "system:nodes"))},
        "status": {},
    }  # fmt: skip
    if "approved_for" in c:
        obj["metadata"]["annotations"] = {"research.cluster/node": c["approved_for"]}
        obj["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    return obj


def _run(case: dict, tmp_path):
    fakes, state = tmp_path / "bin", tmp_path / "state"
    fakes.mkdir()
    state.mkdir()
    for name in ("kubectl", "aws"):
        (fakes / name).symlink_to(HERE / "fakes/csr_approver_fake.sh")
    (state / "csrs.json").write_text(json.dumps({"items": [_csr(c) for c in case["csrs"]]}))
    (state / "nodes").write_text(" ".join(case.get("nodes", [])))
    if "lab" in case:
        (state / "lab").write_text(case["lab"])
    for region, lines in case.get("ec2", {}).items():
        (state / f"ec2-{region}").write_text("".join(f"{line}\n" for line in lines))
    if case.get("ec2_fails"):
        (state / "ec2-fails").touch()
    (state / "calls").touch()
    script = f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\napprove_csrs\n"
    done = subprocess.run(["bash", "-c", script], env={"PATH": f"{fakes}:/usr/bin:/bin", "FAKE_STATE": str(state)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done, (state / "calls").read_text().splitlines()


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_approve_csrs(case, tmp_path):
    done, calls = _run(case, tmp_path)
    assert done.returncode == 0, done.stderr
    approved = [c.split()[-1] for c in calls if " certificate approve " in c]
    denied = [c.split()[-1] for c in calls if " certificate deny " in c]
    assert (approved, denied) == (case["approved"], case["denied"]), done.stderr
    # kubeadm's blanket auto-approval of bootstrap requests is gone (kubeadm upgrade apply makes it again)
    assert any("delete clusterrolebinding kubeadm:node-autoapprove-bootstrap" in c for c in calls)
    for name in approved:  # each approval remembers its node, so that a second request for it is denied
        assert any(f"annotate csr {name} research.cluster/node=" in c for c in calls)


def test_the_approver_and_serve_joins_each_run_on_their_own_unit():
    """Withdrawing the certificates (serve-joins) is its own unit and timer: it never waits on gc-nodes' EC2
    calls (before, one oneshot unit ran gc-nodes, then serve-joins)."""
    text = BOOTSTRAP.read_text()
    units = {}
    for block in text.split('cat >"$root/etc/systemd/system/')[1:]:
        name, body = block.split('"', 1)
        units[name] = body.split("\nUNIT", 1)[0]
    execs = {n: [line for line in b.splitlines() if line.startswith("ExecStart=")] for n, b in units.items()}
    assert execs["cluster-node-lifecycle.service"] == [
        "ExecStart=/usr/local/sbin/cluster-control-plane gc-nodes"
    ]
    assert execs["cluster-serve-joins.service"] == [
        "ExecStart=/usr/local/sbin/cluster-control-plane serve-joins"
    ]
    assert execs["cluster-csr-approver.service"] == [
        "ExecStart=/usr/local/sbin/cluster-control-plane approve-csrs"
    ]
    for timer in ("cluster-serve-joins", "cluster-csr-approver"):
        assert f"systemctl enable --now {timer}.timer" in text


def test_the_certificate_exporters_folder_holds_certificates_and_never_a_key(tmp_path):
    """Issue 36: what `publish` copies for the certificate exporter (provision/monitoring.py EXPORTED_CERTIFICATES)
    from a control plane's real layout: kubeadm's *.crt beside their keys, kubeconfigs with embedded client keys,
    the kubelet's pem holding certificate and key."""
    import datetime as dt

    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    root = tmp_path / "root"
    k = root / "etc/kubernetes"
    (k / "pki/etcd").mkdir(parents=True)
    (root / "var/lib/kubelet/pki").mkdir(parents=True)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(KEY.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + dt.timedelta(days=1))
            .sign(KEY, hashes.SHA256()).public_bytes(Encoding.PEM))  # fmt: skip
    key = KEY.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    for folder in (k / "pki", k / "pki/etcd"):
        (folder / "ca.crt").write_bytes(cert)
        (folder / "ca.key").write_bytes(key)
    (k / "admin.conf").write_text(
        "users:\n- name: kubernetes-admin\n  user:\n"
        f"    client-certificate-data: {base64.b64encode(cert).decode()}\n"
        f"    client-key-data: {base64.b64encode(key).decode()}\n"
    )
    (root / "var/lib/kubelet/pki/kubelet-client-current.pem").write_bytes(cert + key)
    script = f"set -euo pipefail\nMEMBER=0\nsource {BOOTSTRAP}\nroot={root}\nexport_certificates\n"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    out = k / "exported-certificates"
    assert sorted(p.name for p in out.iterdir()) == [
        "admin.conf.crt",
        "ca.crt",
        "etcd-ca.crt",
        "kubelet-client.crt",
    ]
    for path in out.iterdir():
        text = path.read_bytes()
        assert b"PRIVATE KEY" not in text and text.startswith(b"-----BEGIN CERTIFICATE-----"), path.name
        x509.load_pem_x509_certificate(text)
        assert path.stat().st_mode & 0o777 == 0o644
