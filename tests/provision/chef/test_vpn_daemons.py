"""The gateway's generated configuration loaded by the real daemons, in network namespaces of this machine:
strongSwan (charon-systemd + swanctl) loads the tunnels and negotiates IKE with a responder that plays AWS's
side, BIRD 2 checks the BGP configuration and brings up a session per tunnel with a BIRD that plays the six
virtual private gateway endpoints, and nftables loads the MSS clamp. This kernel installs no ESP SAs, so there
is no data plane: the tunnels' inside links are veth pairs named as the XFRM interfaces would be.
Rules followed: strongSwan's swanctl.conf reference (if_id_in/if_id_out, PSK lookup by both identities), AWS's
route-based VPN (eBGP over the inside /30, AWS side on the first address, selectors 0.0.0.0/0), BIRD 2's
user guide (filters, direct eBGP)."""

from __future__ import annotations

import re
import subprocess

import pytest

from clusterspec.loader import load_spec
from tests.provision.chef.netns import Lab, wait_for
from tests.provision.chef.support import generate, render
from tests.support import require_tool

pytestmark = pytest.mark.tool
FAKE_PSK = "test-only-psk"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """Attributes (documentation addresses: 198.51.100.10 / 10.16.0.1 for the site, 203.0.113.x for AWS)."""
    tmp = tmp_path_factory.mktemp("attrs")
    attrs, node_json = generate(load_spec(), tmp, placeholders=True)
    return attrs["cluster_node"], node_json


def _uplink(lab: Lab, vpn: dict) -> tuple[str, str]:
    gw, aws = lab.ns("gw"), lab.ns("aws")
    lab.link(
        gw, "uplink", f"{vpn['private_ip']}/32", aws, "internet", f"{vpn['tunnels'][0]['outside_ip']}/32"
    )
    for t in vpn["tunnels"][1:]:
        lab.run(aws, "ip", "addr", "add", f"{t['outside_ip']}/32", "dev", "internet")
    lab.run(gw, "ip", "route", "add", "203.0.113.0/24", "dev", "uplink")
    lab.run(aws, "ip", "route", "add", f"{vpn['private_ip']}/32", "dev", "internet")
    return gw, aws


# --- strongSwan ----------------------------------------------------------------------------------------------
def _charon(lab: Lab, ns: str, name: str, swanctl_conf: str, drop_in: str = "") -> dict:
    """Starts charon-systemd in ``ns`` with its own strongswan.conf and vici socket; swanctl's environment."""
    d = lab.dir / name
    (d / "conf.d").mkdir(parents=True)
    (d / "conf.d/tunnels.conf").write_text(swanctl_conf)
    (d / "swanctl.conf").write_text(f"include {d}/conf.d/*.conf\n")
    (d / "drop-in.conf").write_text(drop_in)
    (d / "strongswan.conf").write_text(
        f"""charon {{
  load_modular = yes
  plugins {{
    include /etc/strongswan.d/charon/*.conf
    vici {{
      socket = unix://{d}/vici
    }}
  }}
  filelog {{
    log {{
      path = {d}/charon.log
      default = 1
      ike = 2
    }}
  }}
}}
include {d}/drop-in.conf
"""
    )
    env = {"STRONGSWAN_CONF": str(d / "strongswan.conf")}
    lab.start(ns, "/usr/sbin/charon-systemd", env=env, log=f"{name}-charon")
    wait_for(f"{name}'s vici socket", lambda: (d / "vici").exists(), timeout=20)
    return {"env": env, "uri": f"unix://{d}/vici", "file": str(d / "swanctl.conf"), "log": d / "charon.log"}


def _swanctl(lab: Lab, ns: str, charon: dict, *args: str) -> str:
    return lab.run(ns, "swanctl", *args, "--uri", charon["uri"], env=charon["env"]).stdout


def _aws_side(vpn: dict) -> str:
    """A responder per tunnel endpoint, as AWS's side of each tunnel is configured (same proposals, PSK)."""
    conns, secrets = [], []
    for t in vpn["tunnels"]:
        conns.append(
            f"""  {t["name"]} {{
    version = 2
    local_addrs = {t["outside_ip"]}
    proposals = {vpn["ike_proposals"]}
    encap = yes
    mobike = no
    local {{
      auth = psk
      id = {t["outside_ip"]}
    }}
    remote {{
      auth = psk
      id = {vpn["public_ip"]}
    }}
    children {{
      {t["name"]} {{
        local_ts = 0.0.0.0/0
        remote_ts = 0.0.0.0/0
        esp_proposals = {vpn["esp_proposals"]}
      }}
    }}
  }}"""
        )
        secrets.append(
            f"  ike-{t['name']} {{\n    id-aws = {t['outside_ip']}\n    id-site = {vpn['public_ip']}\n"
            f'    secret = "{FAKE_PSK}-{t["name"]}"\n  }}'
        )
    return "connections {\n" + "\n".join(conns) + "\n}\nsecrets {\n" + "\n".join(secrets) + "\n}\n"


def _gateway_swanctl(gateway, tmp_path) -> str:
    vpn, node_json = gateway
    secrets = {t["name"]: f"{FAKE_PSK}-{t['name']}" for t in vpn["tunnels"]}
    conf = render("swanctl.conf.erb", node_json)
    conf += render(
        "swanctl-secrets.conf.erb", node_json, {"tunnels": vpn["tunnels"], "secrets": secrets}, tmp_path
    )
    return conf


def test_charon_loads_the_gateways_tunnels(gateway, lab, tmp_path):
    require_tool("charon-systemd", "/usr/sbin/charon-systemd")
    require_tool("swanctl")
    vpn = gateway[0]["vpn"]
    gw, _ = _uplink(lab, vpn)
    # a responder-only copy (start_action = none) so that loading is all this test does
    conf = _gateway_swanctl((vpn, gateway[1]), tmp_path).replace(
        "start_action = start", "start_action = none"
    )
    charon = _charon(lab, gw, "gw", conf, render("strongswan-cluster.conf.erb", gateway[1]))
    out = _swanctl(lab, gw, charon, "--load-all", "--file", charon["file"])
    assert f"successfully loaded {len(vpn['tunnels'])} connections, 0 unloaded" in out, out
    assert f"loaded ike secret 'ike-{vpn['tunnels'][0]['name']}'" in out, out
    listed = _swanctl(lab, gw, charon, "--list-conns")
    for t in vpn["tunnels"]:
        assert f"{t['name']}: IKEv2" in listed
    # charon parsed the interface ids: one pair per tunnel, all different
    assert "local-ts=[0.0.0.0/0] remote-ts=[0.0.0.0/0]" in _swanctl(lab, gw, charon, "--list-conns", "--raw")
    # the daemon does check the interface ids it is given: a broken one is refused, not ignored
    first = vpn["tunnels"][0]
    broken = conf.replace(f"if_id_in = {first['if_id']}\n", "if_id_in = not-an-id\n", 1)
    assert broken != conf
    (lab.dir / "gw/conf.d/tunnels.conf").write_text(broken)
    refused = lab.run(
        gw,
        "swanctl",
        "--load-conns",
        "--file",
        charon["file"],
        "--uri",
        charon["uri"],
        env=charon["env"],
        check=False,
    )
    assert (
        refused.returncode != 0
        and f"loading connection '{first['name']}' failed" in refused.stdout + refused.stderr
    )


def test_gateway_negotiates_ike_with_every_aws_endpoint(gateway, lab, tmp_path):
    require_tool("charon-systemd", "/usr/sbin/charon-systemd")
    require_tool("swanctl")
    vpn = gateway[0]["vpn"]
    gw, aws = _uplink(lab, vpn)
    responder = _charon(lab, aws, "aws", _aws_side(vpn))
    _swanctl(lab, aws, responder, "--load-all", "--file", responder["file"])
    drop_in = render("strongswan-cluster.conf.erb", gateway[1])
    charon = _charon(lab, gw, "gw", _gateway_swanctl((vpn, gateway[1]), tmp_path), drop_in)
    _swanctl(lab, gw, charon, "--load-all", "--file", charon["file"])  # start_action = start: initiates

    def established():
        sas = _swanctl(lab, gw, charon, "--list-sas")
        up = {
            t["name"]
            for t in vpn["tunnels"]
            if re.search(rf"^{re.escape(t['name'])}: #\d+, ESTABLISHED", sas, re.M)
        }
        return up if len(up) == len(vpn["tunnels"]) else None

    up = wait_for("an IKE SA on every tunnel", established, timeout=40)
    assert up == {t["name"] for t in vpn["tunnels"]}
    log = charon["log"].read_text()
    assert "NAT" in log or "UDP_ENCAP" in log or "4500" in log  # encap = yes: ESP in UDP 4500


# --- BIRD ------------------------------------------------------------------------------------------------------
def _aws_bird(cluster, vpn: dict) -> str:
    """BIRD playing the six AWS tunnel endpoints: each announces its region's VPC, and (to prove the gateway's
    filters) a default route and another region's network that the gateway must refuse on that session."""
    regions = {r.name: r.cidr for r in cluster.regions}
    lines = [
        "router id 203.0.113.1;",
        "protocol device { }",
        "protocol static aws_networks {",
        "  ipv4;",
        "  route 0.0.0.0/0 blackhole;",
        *[f"  route {cidr} blackhole;" for cidr in regions.values()],
        "}",
    ]
    for i, t in enumerate(vpn["tunnels"]):
        other = next(c for r, c in regions.items() if r != t["region"])
        b = t["bgp"]
        lines += [
            f"protocol bgp aws{i} {{",
            f"  local {b['aws_ip']} as {b['aws_asn']};",
            f"  neighbor {b['site_ip']} as {vpn['bgp']['asn']};",
            f'  interface "p{i}";',
            "  direct;",
            "  hold time 30;",
            f"  ipv4 {{ import all; export where net = {regions[t['region']]} || net = 0.0.0.0/0 || net = {other}; }};",
            "}",
        ]
    return "\n".join(lines) + "\n"


def _birdc(lab: Lab, ns: str, sock, *cmd: str) -> str:
    return lab.run(ns, "birdc", "-s", str(sock), *cmd).stdout


def test_bird_checks_the_generated_configuration(gateway, tmp_path):
    bird = require_tool("bird", "/usr/sbin/bird")
    conf = tmp_path / "bird.conf"
    conf.write_text(render("bird.conf.erb", gateway[1]))
    assert subprocess.run([bird, "-p", "-c", str(conf)], capture_output=True).returncode == 0
    conf.write_text(conf.read_text().replace("neighbor 169.254.", "neighbour 169.254.", 1))
    broken = subprocess.run([bird, "-p", "-c", str(conf)], capture_output=True, text=True)
    assert (
        broken.returncode != 0 and "syntax error" in broken.stderr.lower()
    )  # BIRD does check what it is given


def test_bgp_comes_up_on_every_tunnel_and_the_filters_hold(gateway, lab):
    require_tool("bird", "/usr/sbin/bird")
    require_tool("birdc", "/usr/sbin/birdc")
    cluster = load_spec()
    vpn = gateway[0]["vpn"]
    gw, aws = lab.ns("gw"), lab.ns("aws")
    lab.run(gw, "ip", "addr", "add", f"{vpn['private_ip']}/32", "dev", "lo")  # the gateway's site address
    for i, t in enumerate(
        vpn["tunnels"]
    ):  # the inside links, named as the XFRM interfaces are on the gateway
        lab.link(gw, t["interface"], f"{t['bgp']['site_ip']}/30", aws, f"p{i}", f"{t['bgp']['aws_ip']}/30")
    (lab.dir / "aws.conf").write_text(_aws_bird(cluster, vpn))
    (lab.dir / "gw.conf").write_text(render("bird.conf.erb", gateway[1]))
    aws_sock, gw_sock = lab.dir / "aws.ctl", lab.dir / "gw.ctl"
    lab.start(aws, "bird", "-f", "-c", str(lab.dir / "aws.conf"), "-s", str(aws_sock), log="aws-bird")
    wait_for("the AWS-side BIRD", aws_sock.exists, timeout=10)
    lab.start(gw, "bird", "-f", "-c", str(lab.dir / "gw.conf"), "-s", str(gw_sock), log="gw-bird")
    wait_for("the gateway's BIRD", gw_sock.exists, timeout=10)

    def all_established():
        out = _birdc(lab, gw, gw_sock, "show", "protocols")
        up = re.findall(r"^(aws_\S+)\s+BGP\s+\S+\s+up\s+\S+\s+Established", out, re.M)
        return up if len(up) == len(vpn["tunnels"]) else None

    up = wait_for("BGP Established on every tunnel", all_established, timeout=60)
    assert sorted(up) == sorted(t["bgp"]["protocol"] for t in vpn["tunnels"])

    # the gateway learns exactly each region's VPC (never the default route) and prefers tunnel 1. A session is
    # Established before the UPDATEs cross it (RFC 4271, 8.2.2): a region's route may come first over its second
    # tunnel, so the check waits (bounded) for the routes to settle rather than reading them once.
    preferred = [
        f"{region.cidr} via {t1['bgp']['aws_ip']} dev {t1['interface']} src {vpn['private_ip']} "
        for region, t1 in zip(cluster.regions, vpn["tunnels"][::2], strict=True)
    ]

    def settled():
        out = lab.run(gw, "ip", "route", "show", "proto", "bird").stdout
        return out if all(route in out for route in preferred) else None

    kernel = wait_for("each region's route over its first tunnel", settled, timeout=30)
    routes = _birdc(lab, gw, gw_sock, "show", "route", "where", "source", "=", "RTS_BGP")
    learned = set(re.findall(r"^(\d+\.\d+\.\d+\.\d+/\d+)", routes, re.M))
    assert learned == {r.cidr for r in cluster.regions}, routes
    assert "default" not in kernel

    # AWS hears exactly the site's network on every session
    def heard_everywhere():
        out = _birdc(lab, aws, aws_sock, "show", "route", "where", "source", "=", "RTS_BGP")
        return out if len(re.findall(r"via 169\.254\.", out)) == len(vpn["tunnels"]) else None

    heard = wait_for("the site's network on every session", heard_everywhere, timeout=30)
    assert set(re.findall(r"^(\d+\.\d+\.\d+\.\d+/\d+)", heard, re.M)) == {cluster.site("lab").cidr}, heard


# --- nftables ----------------------------------------------------------------------------------------------------
def test_mss_clamp_loads_and_reloads_in_the_kernel(gateway, lab):
    require_tool("nft", "/usr/sbin/nft")
    vpn = gateway[0]["vpn"]
    gw = lab.ns("gw")
    ruleset = lab.dir / "mss.nft"
    ruleset.write_text(render("mss-clamp.nft.erb", gateway[1]))
    for _ in range(2):  # a second converge replaces the table, never duplicates it
        lab.run(gw, "nft", "-f", str(ruleset))
    listed = lab.run(gw, "nft", "list", "table", "inet", "cluster_vpn_mss").stdout
    assert listed.count(f"maxseg size set {vpn['tcp_mss']}") == 3
    assert all(f'"{t["interface"]}"' in listed for t in vpn["tunnels"])
