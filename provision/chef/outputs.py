"""Terraform outputs the cookbook needs: ``build/terraform/<region>/outputs.json`` (``terraform output -json``)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from provision import tunnels
from provision.errors import UserError
from provision.spec import Cluster

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
