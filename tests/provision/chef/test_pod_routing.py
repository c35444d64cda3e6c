"""The site gateway routes the pod network for the site's machines that are not nodes: its attributes (joins as
a tainted flannel member), and the generated nftables masquerade carrying a ping from a workstation to a pod in
network namespaces, where the pod's node, as every node, has a route back to the overlay only."""

from __future__ import annotations

import sys

import pytest

from clusterspec.loader import load_spec
from provision.chef.attributes import POD_GATEWAY_TAINT
from tests.provision.chef.netns import wait_for
from tests.provision.chef.support import generate, render
from tests.support import require_tool

pytestmark = pytest.mark.tool
# A pod's TCP server: answers each connection with the address it came from.
SERVER = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.129.4.17", 6006)); s.listen()
while True:
    c, peer = s.accept(); c.sendall(peer[0].encode()); c.close()
"""
CLIENT = """
import socket, sys
try:
    c = socket.create_connection(("10.129.4.17", 6006), timeout=0.5); print(c.recv(64).decode())
except OSError as e:
    sys.exit(f"unreachable: {e}")
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    attrs, node_json = generate(load_spec(), tmp_path_factory.mktemp("attrs"), placeholders=True)
    return attrs["cluster_node"], node_json


def test_the_gateway_joins_tainted_and_workers_do_not_get_the_taint(site):
    attrs, _ = site
    servers = attrs["servers"]
    assert servers["gw-01"]["roles"] == ["gateway"]
    assert POD_GATEWAY_TAINT in servers["gw-01"]["taints"]  # flannel tolerates it; jobs never land there
    assert servers["gw-01"]["labels"]["research.cluster/role"] == "pod-gateway"
    assert all(POD_GATEWAY_TAINT not in s["taints"] for n, s in servers.items() if n != "gw-01")
    assert attrs["pod_routing"] == {"pod_cidr": "10.128.0.0/14", "sources": ["10.16.0.0/20"]}


def test_a_workstation_reaches_a_pod_through_the_gateway_only_with_the_masquerade(site, lab):
    require_tool("ss", "/usr/bin/ss")
    """workstation 10.16.2.50 ─ lan ─ gateway 10.16.0.1 ═ flannel.1 (10.128.7.0) ═ node 10.129.4.0 ─ pod 10.129.4.17.
    The overlay link stands in for flannel's VXLAN device with flannel's own routes (<subnet> via <subnet>.0
    dev flannel.1 onlink); the node knows no route to the site's network, as a cloud node's pods cannot answer
    there directly (the ENI's source/destination check)."""
    require_tool("nft", "/usr/sbin/nft")
    ws, gw, node = lab.ns("ws"), lab.ns("gw"), lab.ns("node")
    lab.link(ws, "lan", "10.16.2.50/20", gw, "lan", "10.16.0.1/20")
    lab.link(gw, "flannel.1", "10.128.7.0/32", node, "flannel.1", "10.129.4.0/32")
    lab.run(node, "ip", "addr", "add", "10.129.4.17/32", "dev", "lo")  # the pod
    lab.run(ws, "ip", "route", "add", "10.128.0.0/14", "via", "10.16.0.1")  # the site router's route
    lab.run(gw, "ip", "route", "add", "10.129.4.0/24", "via", "10.129.4.0", "dev", "flannel.1", "onlink")
    lab.run(node, "ip", "route", "add", "10.128.7.0/24", "via", "10.128.7.0", "dev", "flannel.1", "onlink")
    lab.run(gw, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    lab.start(node, sys.executable, "-c", SERVER, log="pod")
    listening = "10.129.4.17:6006"
    wait_for("the pod's server", lambda: listening in lab.run(node, "ss", "-ltn").stdout, timeout=15)

    def connect():
        return lab.run(ws, sys.executable, "-c", CLIENT, check=False)

    # forwarded, but the pod's answer has no way back to 10.16.2.50
    assert connect().returncode != 0
    ruleset = lab.dir / "pod-routing.nft"
    ruleset.write_text(render("pod-routing.nft.erb", site[1]))
    for _ in range(2):  # a second converge replaces the table, never duplicates it
        lab.run(gw, "nft", "-f", str(ruleset))
    assert lab.run(gw, "nft", "list", "ruleset").stdout.count("masquerade") == 1
    answer = connect()
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == "10.128.7.0"  # the pod saw the gateway's overlay address
