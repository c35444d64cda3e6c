"""BGP between the site gateway (BIRD 2) and each region's virtual private gateway, one session per tunnel.

eBGP over the tunnel's inside addresses (provision/tunnels.py): the site announces exactly its own network and
accepts from each region exactly that region's VPC network (and longer prefixes inside it), so a mistake on
either side cannot pull the site's default route or another region's traffic into a tunnel. Timers are AWS's
(hold time 30 s, keepalive 10 s; AWS Site-to-Site VPN "customer gateway device" requirements). Tunnel 1 of a
region is preferred (local preference 200 over 100) so that the site's traffic takes one tunnel at a time;
AWS may answer on either, which the XFRM interfaces accept (rp_filter loose).
"""

from __future__ import annotations

from clusterspec.spec import Cluster
from provision import tunnels

HOLD_TIME_S = 30
KEEPALIVE_S = 10
PREFERENCE = {1: 200, 2: 100}


def protocol_name(region: str, tunnel: int) -> str:
    """BIRD protocol names are symbols: letters, digits and underscores."""
    return f"aws_{region.replace('-', '_')}_t{tunnel}"


def session(cluster: Cluster, region_index: int, tunnel: dict, n: int) -> dict:
    """The BGP fields of one tunnel: addresses, ASNs, what it may carry."""
    region = cluster.regions[region_index]
    aws_ip, site_ip = tunnels.addresses(tunnel["inside_cidr"])
    return {
        "protocol": protocol_name(region.name, n),
        "aws_ip": aws_ip,
        "site_ip": site_ip,
        "aws_asn": tunnel["aws_asn"],
        "accept": [region.cidr],
        "local_pref": PREFERENCE[n],
    }


def gateway(cluster: Cluster, site) -> dict:
    """The gateway's own BGP settings."""
    return {
        "asn": site.gateway.bgp_asn,
        "router_id": site.gateway.private_ip,
        "announce": [site.cidr],
        "hold_time_s": HOLD_TIME_S,
        "keepalive_s": KEEPALIVE_S,
    }
