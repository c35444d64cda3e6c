import ipaddress
import itertools

import pytest

from clusterspec.addresses import address_plan, cidrsubnet, zone_subnets
from clusterspec.loader import load_spec


@pytest.mark.parametrize(
    ("prefix", "newbits", "netnum", "expected"),
    [
        ("10.0.0.0/16", 3, 0, "10.0.0.0/19"),
        ("10.0.0.0/16", 3, 7, "10.0.224.0/19"),
        ("10.0.224.0/19", 3, 2, "10.0.232.0/22"),
        ("172.16.0.0/12", 4, 15, "172.31.0.0/16"),
    ],
)
def test_cidrsubnet_matches_terraform(prefix, newbits, netnum, expected):
    assert cidrsubnet(prefix, newbits, netnum) == expected


def test_cidrsubnet_rejects_overflow():
    with pytest.raises(ValueError):
        cidrsubnet("10.0.0.0/16", 3, 8)


def test_subnets_lie_in_their_vpc_and_do_not_overlap():
    for region in load_spec().regions:
        vpc = ipaddress.ip_network(region.cidr)
        nets = [
            ipaddress.ip_network(n) for _, a, b in zone_subnets(region.cidr, region.zones) for n in (a, b)
        ]
        assert all(n.subnet_of(vpc) for n in nets)
        assert not any(a.overlaps(b) for a, b in itertools.combinations(nets, 2))


def test_plan_covers_every_network():
    kinds = [n.kind for n in address_plan(load_spec())]
    assert kinds.count("vpc") == 3 and kinds.count("private") == 10 and kinds.count("public") == 10
    assert {"site", "vpn-clients", "pods", "services"} <= set(kinds)
