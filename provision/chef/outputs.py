"""Terraform outputs the cookbook needs: ``build/terraform/<region>/outputs.json`` (``terraform output -json``)."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

from clusterspec.errors import UserError
from clusterspec.spec import Cluster
from provision import tunnels

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS_DIR = ROOT / "build" / "terraform"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(
            f"{path}: no Terraform outputs; run `invoke up` first (or pass --placeholders for a dry run)"
        ) from None
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not the JSON of `terraform output -json`: {e}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected an object of outputs, got {type(data).__name__}")
    return data


def _value(data: dict, name: str):
    """An output's value; ``terraform output -json`` wraps each as {"value", "type", "sensitive"}."""
    out = data.get(name)
    return out.get("value") if isinstance(out, dict) and "value" in out else None


def site_tunnels(outputs_dir: Path, region: str, site: str) -> list[dict]:
    """The site's two tunnels in ``region``, checked: outside IPv4 address, inside /30, PSK parameter name."""
    path = outputs_dir / region / "outputs.json"
    tunnels = _value(_read(path), "site_vpn_tunnels")
    if not isinstance(tunnels, dict):
        raise UserError(
            f"{path}: output site_vpn_tunnels is missing; run `invoke up` to apply the VPN module"
        )
    mine = tunnels.get(site)
    if not isinstance(mine, list) or len(mine) != 2:
        raise UserError(
            f"{path}: site_vpn_tunnels.{site} should list the site's 2 tunnels, got {mine!r}; "
            "is the site in cluster.yaml applied with `invoke up`?"
        )
    for i, t in enumerate(mine):
        where = f"{path}: site_vpn_tunnels.{site}[{i}]"
        try:
            ipaddress.IPv4Address(t["outside_ip"])
            inside = ipaddress.IPv4Network(t["inside_cidr"])
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(f"{where}: needs outside_ip (IPv4) and inside_cidr (a /30): {e}") from None
        if inside.prefixlen != 30:
            raise UserError(f"{where}.inside_cidr: {t['inside_cidr']} should be a /30 (169.254.x.y/30)")
        if not str(t.get("psk_parameter", "")).startswith("/"):
            raise UserError(
                f"{where}.psk_parameter: expected an SSM parameter name, got {t.get('psk_parameter')!r}"
            )
    for i, t in enumerate(mine):
        asn = t.get("aws_asn")
        if not isinstance(asn, int) or isinstance(asn, bool):
            raise UserError(
                f"{path}: site_vpn_tunnels.{site}[{i}].aws_asn is missing; run `invoke up` "
                "(the route-based VPN module publishes the AWS side's BGP ASN)"
            )
    return [{k: t[k] for k in ("outside_ip", "inside_cidr", "psk_parameter", "aws_asn")} for t in mine]


def api_endpoint(outputs_dir: Path, region: str) -> str | None:
    """``host:port`` of the API server from the primary region's ``api_endpoint`` output (None when absent)."""
    value = _value(_read(outputs_dir / region / "outputs.json"), "api_endpoint")
    return value if isinstance(value, str) and value else None


def placeholder_tunnels(cluster: Cluster, region_index: int, region: str, site: str) -> list[dict]:
    """Documentation addresses (TEST-NET-3) for a dry run without Terraform; never a working VPN."""
    inside = tunnels.inside_cidrs(cluster, region, site)
    return [
        {
            "outside_ip": f"203.0.113.{10 * region_index + n}",
            "inside_cidr": inside[n - 1],
            "psk_parameter": f"{cluster.vpn.psk_ssm_prefix}/{region}/{site}/tunnel{n}",
            "aws_asn": tunnels.amazon_asns(cluster)[region],
        }
        for n in (1, 2)
    ]


def resolver_ips(outputs_dir: Path, region: str) -> list[str]:
    """The Resolver inbound endpoint's addresses from the primary region's ``resolver_inbound_ips`` output."""
    path = outputs_dir / region / "outputs.json"
    ips = _value(_read(path), "resolver_inbound_ips")
    if not isinstance(ips, list) or len(ips) < 2:
        raise UserError(
            f"{path}: output resolver_inbound_ips should list the Resolver inbound endpoint's 2+ addresses, "
            f"got {ips!r}; run `invoke up --region {region}`"
        )
    for ip in ips:
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise UserError(f"{path}: resolver_inbound_ips: {ip!r} is not an IPv4 address") from None
    return list(ips)


def efs_dns_name(outputs_dir: Path, region: str) -> str:
    """The primary file system's name (``efs_dns_name``), which the servers forward to the inbound endpoint."""
    path = outputs_dir / region / "outputs.json"
    name = _value(_read(path), "efs_dns_name")
    if not isinstance(name, str) or not re.fullmatch(r"fs-[0-9a-f]+\.efs\.[a-z0-9-]+\.amazonaws\.com", name):
        raise UserError(
            f"{path}: output efs_dns_name should be <fs-id>.efs.{region}.amazonaws.com, got {name!r}; "
            f"run `invoke up --region {region}` (storage.efs.enabled)"
        )
    return name


SITE_ACCESS_KEYS = ("trust_anchor_arn", "profile_arn", "role_arn")


def site_access(outputs_dir: Path) -> dict:
    """The Roles Anywhere ARNs from the global root's ``site_access`` output."""
    path = outputs_dir / "global" / "outputs.json"
    access = _value(_read(path), "site_access")
    if access is None:
        raise UserError(
            f"{path}: output site_access is empty; set TF_VAR_site_ca_certificate_pem to the sites' CA "
            "certificate and run `invoke up --region global` (docs/terraform.md, How a site joins)"
        )
    if not isinstance(access, dict) or not all(
        str(access.get(k, "")).startswith("arn:") for k in SITE_ACCESS_KEYS
    ):
        raise UserError(
            f"{path}: site_access should hold {', '.join(SITE_ACCESS_KEYS)} (ARNs), got {access!r}"
        )
    return {k: access[k] for k in SITE_ACCESS_KEYS}


def placeholder_site_access(cluster: Cluster) -> dict:
    """Well-formed ARNs of account 000000000000 for a dry run; never working credentials."""
    base = f"arn:aws:rolesanywhere:{cluster.primary_region}:000000000000"
    return {
        "trust_anchor_arn": f"{base}:trust-anchor/00000000-0000-0000-0000-000000000000",
        "profile_arn": f"{base}:profile/00000000-0000-0000-0000-000000000000",
        "role_arn": f"arn:aws:iam::000000000000:role/{cluster.name}-site",
    }


def placeholder_efs_dns_name(cluster: Cluster) -> str:
    """A file system name of the right form (documentation only)."""
    return f"fs-00000000000000000.efs.{cluster.primary_region}.amazonaws.com"


def placeholder_resolver_ips(cluster: Cluster) -> list[str]:
    """Two addresses in the primary VPC's first two private subnets (documentation only)."""
    vpc = ipaddress.IPv4Network(cluster.region(cluster.primary_region).cidr)
    subnets = list(vpc.subnets(new_prefix=vpc.prefixlen + 3))[:2]
    return [str(s.network_address + 53) for s in subnets]
