"""`invoke certificates` and `invoke rotate-certificates` (docs/operations.md, "Certificates").

Every certificate the cluster depends on, where it lives, when it expires and how it is renewed:

| what | where | watched by | renewed by |
|---|---|---|---|
| kubeadm's certificates and kubeconfigs, the kubelet's | control plane, /etc/kubernetes | x509-certificate-exporter (DaemonSet) | `--kubeadm`: `kubeadm certs renew all`, one member at a time |
| the lab servers' IAM Roles Anywhere certificates | /etc/cluster-node/pki/server.crt | x509-certificate-exporter (DaemonSet) | the site's CA (docs/terraform.md, "How a site joins") |
| the Client VPN CA and each researcher's VPN certificate | the admin's machine | published, then x509-certificate-exporter | `--vpn-user NAME` |
| the Client VPN server certificate and client CA in ACM | ACM | CloudWatch DaysToExpiry alarms; published | `--vpn-server` (re-imported at the same ARN) |
| the pod identity webhook's CA and certificate | the admin's machine, kube-system Secret | published | `invoke deploy-pod-identity` |
| the sites' CA (Roles Anywhere trust anchor) | IAM Roles Anywhere | published | a new CA: `invoke up --region global` |
| the Client VPN revocation list (nextUpdate) | the admin's machine, the endpoint | a static series (RevocationListExpiresSoon) | `--crl` (re-signed and imported) |

"Published": ``--publish`` puts the public certificates into the ConfigMap ``monitoring/watched-certificates``
(no key ever leaves the admin's machine) and the revocation list's nextUpdate into a rule file, both through
``invoke deploy-monitoring``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from cryptography import x509

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import monitoring
from provision.users import DEFAULT_HOME, VpnCa, _pem, _private

SERVER_CERT_DAYS = 825  # the longest validity browsers and most TLS clients accept for a server certificate


@dataclass(frozen=True)
class Entry:
    name: str  # e.g. vpn-client/alice, acm/client-vpn-server, crl/client-vpn
    where: str
    not_after: dt.datetime
    renew: str
    pem: bytes | None = None  # the public certificate, for --publish (None: a CRL or nothing to publish)

    def days_left(self, now: dt.datetime) -> float:
        return (self.not_after - now).total_seconds() / 86400


def _cert(path: Path) -> x509.Certificate | None:
    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None


def _kubeconfig_cert(path: Path) -> x509.Certificate | None:
    import base64

    import yaml

    try:
        data = yaml.safe_load(path.read_text())
        user = data["users"][0]["user"]
        pem = base64.b64decode(user["client-certificate-data"])
        return x509.load_pem_x509_certificate(pem)
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def local_entries(cluster: Cluster, home: Path | None = None) -> list[Entry]:
    """What the admin's machine holds (``add-user``, ``deploy-pod-identity``)."""
    home = Path(home or DEFAULT_HOME)
    out: list[Entry] = []
    ca = _cert(home / "vpn-ca" / "ca.crt")
    if ca is not None:
        out.append(Entry("vpn-ca", str(home / "vpn-ca/ca.crt"), ca.not_valid_after_utc,
                         "a new CA means a new certificate for every researcher and the endpoint's client CA "
                         "(docs/operations.md, \"Certificates\")", _pem(ca)))  # fmt: skip
    for folder in sorted((home / "users").glob("*")):
        user = folder.name
        cert = _cert(folder / "vpn-client.crt")
        if cert is not None:
            out.append(Entry(f"vpn-client/{user}", str(folder / "vpn-client.crt"), cert.not_valid_after_utc,
                             f"invoke rotate-certificates --vpn-user {user}", _pem(cert)))  # fmt: skip
        kube = _kubeconfig_cert(folder / "kubeconfig")
        if kube is not None:
            out.append(Entry(f"kubeconfig/{user}", str(folder / "kubeconfig"), kube.not_valid_after_utc,
                             f"invoke add-user {user} (a new kubeconfig through the CSR API)", _pem(kube)))  # fmt: skip
    webhook = _cert(home / "webhook-ca" / "ca.crt")
    if webhook is not None:
        out.append(Entry("webhook-ca", str(home / "webhook-ca/ca.crt"), webhook.not_valid_after_utc,
                         "a new CA: remove webhook-ca/ and run invoke deploy-pod-identity", _pem(webhook)))  # fmt: skip
    crl_path = home / "vpn-ca" / "crl.pem"
    if crl_path.exists():
        crl = x509.load_pem_x509_crl(crl_path.read_bytes())
        out.append(
            Entry("crl/client-vpn", str(crl_path), crl.next_update_utc, "invoke rotate-certificates --crl")
        )
    return out


def client_vpn_endpoint(cluster: Cluster, session: boto3.Session | None = None) -> dict | None:
    """The laptops' Client VPN endpoint of the primary region (terraform/modules/client_vpn), or None."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    ec2 = session.client("ec2", region_name=cluster.primary_region)
    name = f"{cluster.name}-{cluster.primary_region}-laptops"
    for e in ec2.describe_client_vpn_endpoints().get("ClientVpnEndpoints", []):
        tags = {t["Key"]: t["Value"] for t in e.get("Tags", [])}
        if tags.get("Name") == name or e.get("Description") == name:
            return e
    return None


def aws_entries(cluster: Cluster, session: boto3.Session | None = None) -> list[Entry]:
    """What AWS holds: the Client VPN's ACM certificates, the sites' CA (the Roles Anywhere trust anchor)."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    region = cluster.primary_region
    out: list[Entry] = []
    try:
        endpoint = client_vpn_endpoint(cluster, session)
        arns = {}
        if endpoint:
            arns["client-vpn-server"] = endpoint.get("ServerCertificateArn")
            for auth in endpoint.get("AuthenticationOptions", []):
                chain = (auth.get("MutualAuthentication") or {}).get("ClientRootCertificateChain")
                if chain:
                    arns["client-vpn-client-ca"] = chain
        acm = session.client("acm", region_name=region)
        for name, arn in arns.items():
            if not arn:
                continue
            pem = acm.get_certificate(CertificateArn=arn)["Certificate"].encode()
            cert = x509.load_pem_x509_certificate(pem)
            renew = ("invoke rotate-certificates --vpn-server" if name == "client-vpn-server"
                     else "the VPN CA's certificate (vpn-ca)")  # fmt: skip
            out.append(Entry(f"acm/{name}", arn, cert.not_valid_after_utc, renew, pem))
        ra = session.client("rolesanywhere", region_name=region)
        for anchor in ra.list_trust_anchors().get("trustAnchors", []):
            if anchor.get("name") != f"{cluster.name}-sites":
                continue
            data = (anchor.get("source") or {}).get("sourceData", {}).get("x509CertificateData")
            if data:
                cert = x509.load_pem_x509_certificate(data.encode())
                out.append(Entry("sites-ca", anchor["trustAnchorArn"], cert.not_valid_after_utc,
                                 "a new sites CA: TF_VAR_site_ca_certificate_pem=... invoke up --region global",
                                 data.encode()))  # fmt: skip
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"cannot read the certificates AWS holds: {e}".splitlines()[0]) from None
    return out


def report(entries: list[Entry], warn_days: int, now: dt.datetime | None = None) -> tuple[list[str], int]:
    """One line per entry, soonest first; exit status 1 when any is within ``warn_days``."""
    now = now or dt.datetime.now(dt.UTC)
    lines, code = [], 0
    for e in sorted(entries, key=lambda e: e.not_after):
        left = e.days_left(now)
        mark = "EXPIRED" if left < 0 else "RENEW" if left < warn_days else "ok"
        code = code or int(mark != "ok")
        lines.append(f"{mark:7} {left:7.0f} days  {e.name}  ({e.not_after:%Y-%m-%d})  renew: {e.renew}")
    return lines, code


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def publish_files(entries: list[Entry], out: Path | None = None) -> tuple[Path, Path]:
    """The public certificates for the ConfigMap watched-certificates (one file each) and the rule file with
    the revocation list's nextUpdate; nothing secret."""
    out = out or monitoring.OUT
    folder = out / monitoring.WATCHED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.pem"):
        old.unlink()
    for e in entries:
        if e.pem:
            (folder / f"{_safe(e.name)}.pem").write_bytes(e.pem)
    series = [
        f"      - record: research_crl_next_update\n        expr: vector({int(e.not_after.timestamp())})\n"
        f"        labels: {{crl: {e.name.split('/', 1)[1]}}}\n"
        for e in entries
        if e.name.startswith("crl/")
    ]
    rules = out / monitoring.ADMIN_RULES
    text = (
        "groups:\n  - name: admin-certificates\n    rules:\n" + "".join(series) if series else "groups: []\n"
    )
    rules.write_text("# written by `invoke certificates --publish`: the admin's revocation lists\n" + text)
    return folder, rules


# --- rotation -------------------------------------------------------------------------------------------------
def renew_kubeadm_script() -> str:
    """One member: renew every kubeadm certificate, restart the control-plane static pods so they load them
    (kubeadm docs, "Certificate Management with kubeadm": "restart the control plane Pods"), wait for the API."""
    return """set -euo pipefail
kubeadm certs check-expiration
kubeadm certs renew all
held=/etc/kubernetes/manifests.renew
install -d -m 0700 "$held"
for m in kube-apiserver kube-controller-manager kube-scheduler etcd; do
  mv "/etc/kubernetes/manifests/$m.yaml" "$held/$m.yaml"
done
for _ in $(seq 60); do [[ -z $(crictl ps --name '^(kube-apiserver|etcd)$' -q) ]] && break; sleep 2; done
mv "$held"/*.yaml /etc/kubernetes/manifests/
for _ in $(seq 150); do curl -fsk https://127.0.0.1:6443/readyz >/dev/null && break; sleep 2; done
curl -fsk https://127.0.0.1:6443/readyz >/dev/null
kubeadm certs check-expiration
"""


def renew_kubeadm(runner, members, say=print) -> None:
    """Member by member: the next only once the API answers again on the last one (a quorum stays up)."""
    for m in members:
        say(f"member {m.index} ({m.instance_id}): kubeadm certs renew all, restart the control-plane pods")
        (r,) = runner.run([m.instance_id], renew_kubeadm_script(), 900, "kubeadm certs renew").values()
        if not r.ok:
            raise UserError(
                [f"member {m.index} ({m.instance_id}): {r.status}, exit {r.code}: "
                 f"{(r.stderr.strip().splitlines() or [''])[-1]}", "the members after it were not touched"]
            )  # fmt: skip
        expiry = [line for line in r.stdout.splitlines() if re.match(r"^(admin\.conf|apiserver )", line)]
        say("  " + (expiry[-1] if expiry else "renewed"))


def renew_vpn_user(cluster: Cluster, user: str, home: Path | None = None) -> tuple[Path, Path]:
    """A new VPN certificate for ``user`` from the admin's VPN CA (the old one stays valid until it expires)."""
    home = Path(home or DEFAULT_HOME)
    key, cert, _ = VpnCa(home / "vpn-ca", cluster.name).issue(user, cluster.domain)
    out = home / "users" / user
    _private(out / "vpn-client.key", key)
    (out / "vpn-client.crt").write_bytes(cert)
    return out / "vpn-client.crt", out / "vpn-client.key"


def renew_crl(cluster: Cluster, home: Path | None = None, session: boto3.Session | None = None,
              endpoint_id: str | None = None) -> tuple[Path, str | None]:  # fmt: skip
    """Re-sign the revocation list (a new nextUpdate) and import it into the Client VPN endpoint."""
    ca = VpnCa(Path(home or DEFAULT_HOME) / "vpn-ca", cluster.name)
    path = ca.write_crl()
    session = session or boto3.Session(region_name=cluster.primary_region)
    if endpoint_id is None:
        endpoint = client_vpn_endpoint(cluster, session)
        endpoint_id = endpoint["ClientVpnEndpointId"] if endpoint else None
    if endpoint_id:
        session.client(
            "ec2", region_name=cluster.primary_region
        ).import_client_vpn_client_certificate_revocation_list(
            ClientVpnEndpointId=endpoint_id, CertificateRevocationList=path.read_text()
        )
    return path, endpoint_id


def renew_vpn_server(cluster: Cluster, home: Path | None = None, session: boto3.Session | None = None) -> str:
    """A new server certificate for the Client VPN endpoint from the admin's VPN CA, re-imported into ACM at the
    same ARN (ACM ImportCertificate with CertificateArn: the endpoint keeps its reference). RSA 2048: the key
    type Client VPN accepts for its server certificate."""
    session = session or boto3.Session(region_name=cluster.primary_region)
    endpoint = client_vpn_endpoint(cluster, session)
    if not endpoint or not endpoint.get("ServerCertificateArn"):
        raise UserError(
            f"no Client VPN endpoint {cluster.name}-{cluster.primary_region}-laptops with a server certificate"
        )
    arn = endpoint["ServerCertificateArn"]
    key, cert, chain = VpnCa(Path(home or DEFAULT_HOME) / "vpn-ca", cluster.name).issue_server(cluster.domain)
    try:
        session.client("acm", region_name=cluster.primary_region).import_certificate(
            CertificateArn=arn,
            Certificate=cert,
            PrivateKey=key,
            CertificateChain=chain,
        )
    except (BotoCoreError, ClientError) as e:
        raise UserError(f"ACM ImportCertificate {arn}: {e}".splitlines()[0]) from None
    return arn  # the new key went to ACM only; nothing was written here
