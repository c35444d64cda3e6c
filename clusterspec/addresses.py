"""The address plan: every network of the cluster and every subnet per availability zone.

The subnet arithmetic matches ``terraform/modules/addressing`` exactly (``cidrsubnet`` with the same new bits),
which Terraform tests offline; this module is the Python side used by ``invoke plan-addresses`` and the checks.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from clusterspec.spec import Cluster

# Private subnets: cidrsubnet(vpc, PRIVATE_NEWBITS, az_index); public subnets: cidrsubnet(last private-sized
# block, PUBLIC_NEWBITS, az_index). For a /16 VPC: private /19 per AZ (8,190 hosts), public /22 per AZ.
PRIVATE_NEWBITS = 3
PUBLIC_NEWBITS = 3
MAX_ZONES = 2**PRIVATE_NEWBITS - 1


def cidrsubnet(prefix: str, newbits: int, netnum: int) -> str:
    """Terraform's ``cidrsubnet``."""
    net = ipaddress.ip_network(prefix)
    if netnum >= 2**newbits:
        raise ValueError(f"netnum {netnum} does not fit in {newbits} new bits of {prefix}")
    size = net.prefixlen + newbits
    step = 2 ** (net.max_prefixlen - size)
    return str(ipaddress.ip_network((int(net.network_address) + netnum * step, size)))


@dataclass(frozen=True)
class Network:
    kind: str  # vpc, private, public, site, vpn-clients, pods, services
    owner: str  # region, zone, site or "cluster"
    cidr: str

    @property
    def hosts(self) -> int:
        return ipaddress.ip_network(self.cidr).num_addresses


def zone_subnets(vpc_cidr: str, zones: list[str]) -> list[tuple[str, str, str]]:
    """``[(zone, private_cidr, public_cidr)]`` in zone order."""
    public_block = cidrsubnet(vpc_cidr, PRIVATE_NEWBITS, 2**PRIVATE_NEWBITS - 1)
    return [
        (z, cidrsubnet(vpc_cidr, PRIVATE_NEWBITS, i), cidrsubnet(public_block, PUBLIC_NEWBITS, i))
        for i, z in enumerate(zones)
    ]


def address_plan(cluster: Cluster) -> list[Network]:
    out: list[Network] = []
    for r in cluster.regions:
        out.append(Network("vpc", r.name, r.cidr))
        for zone, private, public in zone_subnets(r.cidr, r.zones):
            out.append(Network("private", zone, private))
            out.append(Network("public", zone, public))
    for s in cluster.sites:
        out.append(Network("site", s.name, s.cidr))
    out.append(Network("vpn-clients", "laptops", cluster.vpn.client_cidr))
    out.append(Network("pods", "flannel", cluster.kubernetes.pod_cidr))
    out.append(Network("services", "kubernetes", cluster.kubernetes.service_cidr))
    return out
