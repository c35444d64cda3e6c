"""The gateway's XFRM interface script (shellcheck, and run against a fake `ip`: this kernel has no XFRM
interfaces) and the tunnel naming, MTU and BGP attributes it is generated from."""

from __future__ import annotations

import os
import subprocess

import pytest

from clusterspec.loader import load_spec
from tests.provision.chef.support import HERE, generate, render
from tests.support import ROOT, require_tool

pytestmark = pytest.mark.tool


def _run_script(script: str, tmp_path, existing: str = "") -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "ip").unlink(missing_ok=True)
    (bin_dir / "ip").symlink_to(HERE / "ip_fake.sh")
    path = tmp_path / "xfrm.sh"
    path.write_text(script)
    calls = tmp_path / "calls"
    calls.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_CALLS": str(calls), "FAKE_LINKS": existing}
    result = subprocess.run(["bash", str(path)], env=os.environ | env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return calls.read_text().splitlines()


def test_xfrm_script_creates_one_interface_per_tunnel_idempotently(tmp_path):
    attrs, node_json = generate(load_spec(), tmp_path)
    vpn = attrs["cluster_node"]["vpn"]
    script = render("xfrm-interfaces.sh.erb", node_json)
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    (tmp_path / "check.sh").write_text(script)
    lint = subprocess.run(
        [shellcheck, "-S", "warning", str(tmp_path / "check.sh")], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout

    calls = _run_script(script, tmp_path)
    assert calls[0] == f"ip -o route get {vpn['tunnels'][0]['outside_ip']}"
    for t in vpn["tunnels"]:
        name = t["interface"]
        assert f"ip link add {name} type xfrm dev uplink0 if_id {t['if_id']}" in calls
        assert f"ip link set {name} mtu {vpn['tunnel_mtu']} up" in calls
        assert f"ip addr replace {t['bgp']['site_ip']}/30 dev {name}" in calls
    existing = " ".join(t["interface"] for t in vpn["tunnels"])
    again = _run_script(script, tmp_path, existing)
    assert not [c for c in again if "link add" in c] and sum("addr replace" in c for c in again) == 6


def test_tunnel_names_ids_and_bgp_fields(tmp_path):
    cluster = load_spec()
    vpn = generate(cluster, tmp_path)[0]["cluster_node"]["vpn"]
    names = [t["interface"] for t in vpn["tunnels"]]
    assert names == ["aws0-usw2-1", "aws0-usw2-2", "aws1-use1-1", "aws1-use1-2", "aws2-use2-1", "aws2-use2-2"]
    assert all(len(n) <= 15 for n in names)
    assert len({t["if_id"] for t in vpn["tunnels"]}) == 6 and 0 not in {t["if_id"] for t in vpn["tunnels"]}
    assert vpn["bgp"] == {
        "asn": 65010,
        "router_id": "10.16.0.1",
        "announce": ["10.16.0.0/20"],
        "hold_time_s": 30,
        "keepalive_s": 10,
    }
    first = vpn["tunnels"][0][
        "bgp"
    ]  # terraform_outputs.yaml: us-west-2 tunnel 1 is 169.254.10.0/30, AS 64512
    assert first == {
        "protocol": "aws_us_west_2_t1",
        "aws_ip": "169.254.10.1",
        "site_ip": "169.254.10.2",
        "aws_asn": 64512,
        "accept": ["10.0.0.0/16"],
        "local_pref": 200,
    }
    assert (vpn["tunnel_mtu"], vpn["pod_mtu"], vpn["tcp_mss"]) == (1422, 1372, 1382)
