"""A real etcd (Debian's etcd-server, `make tools`) on loopback with TLS as kubeadm sets it up: a CA, a server
certificate for 127.0.0.1 that is also the client certificate (kubeadm's etcd/server.crt), client cert auth."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from localcluster.processes import free_port
from tests.support import require_tool


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert(subject: str, issuer_key, key, issuer: x509.Name | None, ca: bool, days: int = 365):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        b = b.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        ).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
    return b.sign(issuer_key, hashes.SHA256())


def write_pki(pki: Path) -> Path:
    """kubeadm's layout: etcd/{ca,server}.{crt,key}, and the cluster CA, front proxy CA and SA keys it backs up."""
    (pki / "etcd").mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("etcd-ca", ca_key, ca_key, None, True)
    key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("127.0.0.1", ca_key, key, ca.subject, False)
    (pki / "etcd/ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (pki / "etcd/ca.key").write_bytes(_key_pem(ca_key))
    (pki / "etcd/server.crt").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    (pki / "etcd/server.key").write_bytes(_key_pem(key))
    for name in ("ca", "front-proxy-ca"):
        k = ec.generate_private_key(ec.SECP256R1())
        (pki / f"{name}.crt").write_bytes(
            _cert(name, k, k, None, True).public_bytes(serialization.Encoding.PEM)
        )
        (pki / f"{name}.key").write_bytes(_key_pem(k))
    sa = ec.generate_private_key(ec.SECP256R1())
    (pki / "sa.key").write_bytes(_key_pem(sa))
    (pki / "sa.pub").write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki


@dataclass
class Etcd:
    proc: subprocess.Popen
    name: str
    client_url: str
    peer_url: str
    pki: Path

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        etcdctl = require_tool("etcdctl")
        cmd = [etcdctl, f"--endpoints={self.client_url}", f"--cacert={self.pki}/etcd/ca.crt",
               f"--cert={self.pki}/etcd/server.crt", f"--key={self.pki}/etcd/server.key", *args]  # fmt: skip
        return subprocess.run(
            cmd, capture_output=True, text=True, check=check, env={"ETCDCTL_API": "3"}, timeout=30
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_etcd(data_dir: Path, pki: Path, name: str = "member-0", peer_port: int | None = None,
               new_cluster: bool = True, log: Path | None = None) -> Etcd:  # fmt: skip
    """etcd serving TLS on 127.0.0.1 (a fresh cluster, or an existing/restored data directory)."""
    etcd = require_tool("etcd")
    client = f"https://127.0.0.1:{free_port()}"
    peer = f"https://127.0.0.1:{peer_port or free_port()}"
    tls = [f"--cert-file={pki}/etcd/server.crt", f"--key-file={pki}/etcd/server.key",
           f"--trusted-ca-file={pki}/etcd/ca.crt", "--client-cert-auth",
           f"--peer-cert-file={pki}/etcd/server.crt", f"--peer-key-file={pki}/etcd/server.key",
           f"--peer-trusted-ca-file={pki}/etcd/ca.crt", "--peer-client-cert-auth"]  # fmt: skip
    argv = [etcd, f"--name={name}", f"--data-dir={data_dir}", f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}", f"--initial-cluster={name}={peer}", *tls]  # fmt: skip
    if new_cluster:
        argv.append("--initial-cluster-state=new")
    out = open(log or data_dir.parent / f"{name}.log", "ab")  # noqa: SIM115 - the process keeps it
    proc = subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    e = Etcd(proc, name, client, peer, pki)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"etcd exited with {proc.returncode}; see {out.name}")
        if e.ctl("endpoint", "health", check=False).returncode == 0:
            return e
        time.sleep(0.2)
    e.stop()
    raise RuntimeError(f"etcd did not answer within 30 s; see {out.name}")
