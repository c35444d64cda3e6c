"""`invoke vpn-ca`: the Client VPN's CA and server certificate, in ACM before the first `invoke up` needs them.

1. the VPN CA in the admin's folder (``<home>/vpn-ca``, provision/users.py ``VpnCa``; RSA 2048), made unless it
   exists: the same CA `invoke add-user` issues the laptops' certificates from;
2. a server certificate ``vpn.<domain>`` from it (RSA 2048, serverAuth), imported into ACM in the primary region
   with the CA as its chain. The endpoint's client CA (``root_certificate_chain_arn``) is the same ARN: its chain
   is the CA that issues the clients (Client VPN Administrator Guide, "Mutual authentication": when the server and
   client certificates come from one CA, the server certificate's ARN serves for both), so the CA's own key never
   leaves the admin's machine;
3. both ARNs into ``<out>/<primary region>/client_vpn.auto.tfvars``, which `invoke preflight` and `invoke up` read
   (the file holds ARNs only; render leaves it in place), and the CA's public certificate into
   ``<out>/global/lab_vpn_ca.auto.tfvars``: the trust anchor of the researchers' AWS identities (IAM Roles
   Anywhere, terraform/modules/researcher_access).

Run again, it keeps what is in ACM (the ARN recorded in ``vpn-ca/acm.json``) unless ``renew``: then a new server
certificate is imported at the same ARN (the endpoint keeps its reference). Nothing here needs a running cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import vpn_rules
from provision.users import DEFAULT_HOME, VpnCa

TFVARS = "client_vpn.auto.tfvars"
CA_TFVARS = "lab_vpn_ca.auto.tfvars"
VARIABLES = ("client_vpn_server_certificate_arn", "client_vpn_client_ca_arn")


@dataclass
class Result:
    arn: str
    tfvars: Path
    lines: list[str]


def _recorded(folder: Path, region: str) -> str | None:
    path = folder / "acm.json"
    return json.loads(path.read_text()).get(region) if path.exists() else None


def _record(folder: Path, region: str, arn: str) -> None:
    path = folder / "acm.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**data, region: arn}, indent=1, sort_keys=True) + "\n")


def write_tfvars(root: Path, arn: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / TFVARS
    path.write_text("# invoke vpn-ca: the Client VPN's certificates in ACM (ARNs only)\n"
                    + "".join(f'{v} = "{arn}"\n' for v in VARIABLES))  # fmt: skip
    return path


def create(cluster: Cluster, acm, out: Path, home: Path | None = None, renew: bool = False) -> Result:
    """Make the CA and the server certificate and import them (``acm``: an ACM client of the primary region)."""
    region = cluster.primary_region
    ca = VpnCa(Path(home or DEFAULT_HOME) / "vpn-ca", cluster.name)
    lines = [f"{'made' if ca.create() else 'kept'} the VPN CA {ca.cert_path}"]
    arn = _recorded(ca.folder, region)
    if arn:
        try:
            acm.describe_certificate(CertificateArn=arn)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise UserError(f"ACM DescribeCertificate {arn}: {e}".splitlines()[0]) from None
            lines.append(f"{arn} is no longer in ACM: importing a new server certificate")
            arn, renew = None, True
    if arn and not renew:
        lines.append(f"kept the server certificate {arn} (--renew imports a new one at the same ARN)")
    else:
        key, cert, chain = ca.issue_server(cluster.domain)
        refused = vpn_rules.problems(vpn_rules.SERVER, cert.decode(), chain.decode())
        if refused:  # the CA is checked when loaded; this guards the issuing code itself
            raise UserError(f"vpn-ca: the new server certificate {refused[0]}")
        args = {"Certificate": cert, "PrivateKey": key, "CertificateChain": chain}
        try:
            arn = acm.import_certificate(**args, **({"CertificateArn": arn} if arn else {}))["CertificateArn"]
        except (BotoCoreError, ClientError) as e:
            raise UserError(f"ACM ImportCertificate in {region}: {e}".splitlines()[0]) from None
        _record(ca.folder, region, arn)
        lines.append(f"imported the server certificate vpn.{cluster.domain} into ACM: {arn}")
    path = write_tfvars(out / region, arn)
    lines.append(f"wrote {path} ({' and '.join(VARIABLES)}); `invoke up` reads it")
    anchor = out / "global" / CA_TFVARS
    anchor.parent.mkdir(parents=True, exist_ok=True)
    anchor.write_text("# invoke vpn-ca: the lab's VPN CA (public certificate), the researchers' trust anchor\n"
                      f"lab_vpn_ca_certificate_pem = <<-EOT\n{ca.cert_path.read_text().strip()}\nEOT\n")  # fmt: skip
    lines.append(f"wrote {anchor} (the CA's certificate: the researchers' AWS identities, Roles Anywhere)")
    return Result(arn, path, lines)


def run(cluster: Cluster, out: Path, home: Path | None = None, renew: bool = False) -> list[str]:
    import boto3

    from provision.terraform.runner import require_aws_credentials

    require_aws_credentials()
    return create(cluster, boto3.client("acm", region_name=cluster.primary_region), out, home, renew).lines
