"""The cookbook's ERB templates rendered with Ruby's standard ERB from generated attributes."""

from __future__ import annotations

import ipaddress
import re

import pytest
import yaml

from clusterspec.loader import load_spec
from tests.provision.chef.support import REGION_OUTPUTS, generate, render

pytestmark = pytest.mark.tool  # Ruby renders the templates

FAKE_PSK = "test-only-not-a-key"
OUTPUTS_TUNNELS = [
    dict(t, region=region)
    for region, d in REGION_OUTPUTS.items()
    for t in d["site_vpn_tunnels"]["value"]["lab"]
]


def _swanctl(text: str) -> dict:
    """swanctl.conf's nested sections as dicts (``{"connections": {name: {..., "children": {...}}}}``)."""
    root: dict = {}
    stack = [root]
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.endswith("{"):
            stack[-1][line[:-1].strip()] = section = {}
            stack.append(section)
        elif line == "}":
            stack.pop()
        elif "=" in line:
            key, value = (p.strip() for p in line.split("=", 1))
            stack[-1][key] = value
    assert stack == [root], "unbalanced braces"
    return root


def _swanctl_connections(text: str) -> dict[str, dict[str, str]]:
    """``name -> {key: value}`` per connection; its one child's keys as ``child.<key>``, local/remote as ``local.<key>``."""
    out = {}
    for name, conn in _swanctl(text)["connections"].items():
        flat = {k: v for k, v in conn.items() if isinstance(v, str)}
        for side in ("local", "remote"):
            flat |= {f"{side}.{k}": v for k, v in conn[side].items()}
        (child,) = conn["children"].values()
        flat |= {f"child.{k}": v for k, v in child.items()}
        out[name] = flat
    return out


def test_swanctl_carries_the_spec_proposals_and_the_terraform_tunnels(tmp_path):
    cluster = load_spec()
    _, node_json = generate(cluster, tmp_path)
    conns = _swanctl_connections(render("swanctl.conf.erb", node_json))
    tunnels = {
        t["outside_ip"]: region
        for region, d in REGION_OUTPUTS.items()
        for t in d["site_vpn_tunnels"]["value"]["lab"]
    }
    assert {c["remote_addrs"] for c in conns.values()} == set(tunnels)
    for conn in conns.values():
        region = cluster.region(tunnels[conn["remote_addrs"]])
        assert conn["version"] == "2"
        assert conn["proposals"] == "aes256-sha256-modp2048"  # AES256 / SHA2-256 / DH 14
        assert conn["child.esp_proposals"] == "aes256-sha256-modp2048"
        assert conn["rekey_time"] == "28800s" and conn["child.rekey_time"] == "3600s"
        assert conn["local_addrs"] == "10.16.0.1" and conn["local.id"] == "198.51.100.10"
        assert conn["remote.id"] == conn["remote_addrs"] and conn["local.auth"] == "psk"
        # route-based (AWS's selectors for BGP connections): any flow, the XFRM interface decides what enters
        assert conn["child.local_ts"] == conn["child.remote_ts"] == "0.0.0.0/0"
        assert conn["if_id_in"] == conn["if_id_out"] != "0"
        assert conn["child.start_action"] == "start"
        assert region.name in {
            t["region"] for t in OUTPUTS_TUNNELS if t["outside_ip"] == conn["remote_addrs"]
        }
    assert len({c["if_id_in"] for c in conns.values()}) == len(conns) == 6


def test_swanctl_follows_a_changed_spec(tmp_path):
    from tests.provision.chef.test_attributes import _cluster

    cluster = _cluster(
        {
            "vpn.tunnel.ike_encryption": ["AES128"],
            "vpn.tunnel.dh_groups": [20],
            "vpn.tunnel.esp_lifetime_s": 1800,
            "sites.0.cidr": "10.17.0.0/20",
            "sites.0.gateway.private_ip": "10.17.0.1",
            **{f"sites.0.servers.{i}.ip": f"10.17.0.{10 + i}" for i in range(6)},
        }
    )
    _, node_json = generate(cluster, tmp_path)
    conns = _swanctl_connections(render("swanctl.conf.erb", node_json))
    assert {c["proposals"] for c in conns.values()} == {"aes128-sha256-ecp384"}
    assert {c["child.esp_proposals"] for c in conns.values()} == {"aes256-sha256-ecp384"}
    assert {c["child.rekey_time"] for c in conns.values()} == {"1800s"}
    assert {c["local_addrs"] for c in conns.values()} == {"10.17.0.1"}


def test_secrets_file_pairs_each_tunnel_with_its_key_and_nothing_else(tmp_path):
    attrs, node_json = generate(load_spec(), tmp_path)
    tunnels = attrs["cluster_node"]["vpn"]["tunnels"]
    secrets = {t["name"]: f"{FAKE_PSK}-{i}" for i, t in enumerate(tunnels)}
    text = render("swanctl-secrets.conf.erb", node_json, {"tunnels": tunnels, "secrets": secrets})
    blocks = re.findall(r"ike-(\S+) \{\s*id = (\S+)\s*secret = \"([^\"]+)\"", text)
    assert blocks == [(t["name"], t["outside_ip"], secrets[t["name"]]) for t in tunnels]
    assert FAKE_PSK not in render("swanctl.conf.erb", node_json)


def test_exports_are_the_spec_paths_to_exactly_the_sites_servers(tmp_path):
    """Issue 36: to each site server's own address, never a VPC's CIDR (AUTH_SYS believes whatever uid a client
    sends; a VPC holds the SSH machines, the pod gateways and every autoscaled node)."""
    cluster = load_spec()
    _, node_json = generate(cluster, tmp_path)
    lines = [
        line.split() for line in render("exports.erb", node_json).splitlines() if not line.startswith("#")
    ]
    assert [line[0] for line in lines] == [e.path for e in cluster.storage.nfs.exports]
    nas = cluster.storage.nfs.server
    hosts = {f"{s.ip}/32" for site in cluster.sites for s in site.servers if s.name != nas}
    for line in lines:
        clients = {c.split("(")[0] for c in line[1:]}
        assert clients == hosts
        assert all(ipaddress.ip_network(c).num_addresses == 1 for c in clients)
        assert not any(ipaddress.ip_network(c).subnet_of(ipaddress.ip_network(r.cidr))
                       for c in clients for r in cluster.regions)  # fmt: skip
        assert all(c.endswith("(rw,sync,no_subtree_check,root_squash)") for c in line[1:])


def test_kubeadm_join_config_has_labels_and_taints(tmp_path):
    from tests.provision.chef.test_attributes import _cluster

    cluster = _cluster(
        {
            "sites.0.servers.2.taints": [
                {"key": "research.cluster/owner", "value": "vision", "effect": "NoSchedule"}
            ]
        }
    )
    attrs, node_json = generate(cluster, tmp_path)
    server = attrs["cluster_node"]["servers"]["titan-01"]
    variables = {
        "node_name": "titan-01",
        "server": server,
        "token": "abcdef.0123456789abcdef",
        "ca_cert_hash": "sha256:0",
    }
    config = yaml.safe_load(render("kubeadm-join.yaml.erb", node_json, variables, tmp_path))
    assert config["apiVersion"] == "kubeadm.k8s.io/v1beta4" and config["kind"] == "JoinConfiguration"
    assert config["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "api.research.internal:6443"
    reg = config["nodeRegistration"]
    args = {a["name"]: a["value"] for a in reg["kubeletExtraArgs"]}
    assert args["node-ip"] == "10.16.1.11"
    labels = dict(pair.split("=") for pair in args["node-labels"].split(","))
    assert labels["research.cluster/site"] == "lab"
    assert labels["research.cluster/gpu-model"] == "titan-x"
    assert labels["research.cluster/gpu-architecture"] == "pascal"
    assert reg["taints"] == [{"key": "research.cluster/owner", "value": "vision", "effect": "NoSchedule"}]
    assert config["patches"] == {"directory": "/etc/kubernetes/patches"}  # the kubelet's reservations
