"""The site-to-site tunnels' address and ASN plan, shared by the Terraform VPN module and the Chef cookbook.

AWS would pick each tunnel's inside /30 at random from 169.254.0.0/16: six tunnels of one site gateway (two per
region) could then overlap, and the gateway's interfaces with them. The plan fixes them instead:
``169.254.<10 + region index>.<8 * site index + 4 * (tunnel - 1)>/30``, clear of the /30s AWS reserves
(169.254.0.0/30 ... 169.254.5.0/30, 169.254.169.252/30; AWS VPN tunnel options). In each /30 AWS's side takes
the first host address and the customer gateway the second (AWS's example configurations).
Each region's virtual private gateway gets its own private ASN (64512 + region index, skipping the sites'), so
the site's BGP daemon tells the regions apart in AS paths and eBGP never sees its own ASN on the other side.
"""

from __future__ import annotations

import ipaddress

from clusterspec.errors import UserError
from clusterspec.spec import Cluster

FIRST_OCTET = 10  # 169.254.10.0 onwards
SITES_PER_REGION = 32  # 8 addresses per site in one /24
PRIVATE_ASN_FIRST = 64512
PRIVATE_ASN_LAST = 65534


def inside_cidrs(cluster: Cluster, region: str, site: str) -> list[str]:
    """The two tunnels' inside /30s between ``site`` and ``region``."""
    r = [x.name for x in cluster.regions].index(region)
    s = [x.name for x in cluster.sites].index(site)
    if s >= SITES_PER_REGION:
        raise UserError(f"sites: at most {SITES_PER_REGION} sites fit the tunnel address plan, got {s + 1}")
    base = ipaddress.IPv4Address(f"169.254.{FIRST_OCTET + r}.0") + 8 * s
    return [f"{base + 4 * t}/30" for t in (0, 1)]


def addresses(inside_cidr: str) -> tuple[str, str]:
    """(AWS's, the site's) address in a tunnel's inside /30."""
    net = ipaddress.IPv4Network(inside_cidr)
    return str(net.network_address + 1), str(net.network_address + 2)


def amazon_asns(cluster: Cluster) -> dict[str, int]:
    """Region -> its virtual private gateway's ASN: 64512 upwards in the spec's region order, skipping sites'."""
    taken = {s.gateway.bgp_asn for s in cluster.sites}
    free = (a for a in range(PRIVATE_ASN_FIRST, PRIVATE_ASN_LAST + 1) if a not in taken)
    return {r.name: next(free) for r in cluster.regions}
