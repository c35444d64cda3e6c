"""Site-to-site VPN: route-based tunnels (BGP, selectors 0.0.0.0/0, planned inside /30s and ASNs) pinned to the
spec (strongSwan uses the same), keys only in SSM, and the output Chef reads carries names, never secrets."""

import ipaddress
import itertools
import re

from clusterspec.loader import spec_from_data
from provision import tunnels
from provision.terraform.render import render
from tests.provision.terraform.tf_files import MODULES, module_calls, outputs, parse, resources
from tests.support import example_spec_data

# aws_vpn_connection argument suffix (after tunnel1_/tunnel2_) -> the spec's vpn.tunnel field it must come from
PINNED = {
    "phase1_encryption_algorithms": "ike_encryption",
    "phase1_integrity_algorithms": "ike_integrity",
    "phase1_dh_group_numbers": "dh_groups",
    "phase1_lifetime_seconds": "ike_lifetime_s",
    "phase2_encryption_algorithms": "esp_encryption",
    "phase2_integrity_algorithms": "esp_integrity",
    "phase2_dh_group_numbers": "dh_groups",
    "phase2_lifetime_seconds": "esp_lifetime_s",
    "dpd_timeout_seconds": "dpd_timeout_s",
}


def test_both_tunnels_are_pinned_to_the_spec_fields_and_route_based():
    ((name, vpn),) = resources(MODULES / "vpn", "aws_vpn_connection")
    # AWS route-based VPN: BGP over each tunnel, traffic selectors 0.0.0.0/0 on both sides (AWS's default)
    assert vpn["static_routes_only"] is False
    assert vpn["local_ipv4_network_cidr"] == vpn["remote_ipv4_network_cidr"] == "0.0.0.0/0"
    for i, tunnel in enumerate(("tunnel1", "tunnel2")):
        assert vpn[f"{tunnel}_ike_versions"] == "${local.ike}"
        assert vpn[f"{tunnel}_inside_cidr"] == f"${{each.value.inside_cidrs[{i}]}}"
        for suffix, field in PINNED.items():
            assert vpn[f"{tunnel}_{suffix}"] == f"${{var.tunnel.{field}}}", f"{tunnel}_{suffix}"
    assert 'ike      = ["ikev${var.tunnel.ike_version}"]' in (MODULES / "vpn/main.tf").read_text()
    ((_, vgw),) = resources(MODULES / "vpn", "aws_vpn_gateway")
    assert vgw["amazon_side_asn"] == "${tostring(var.amazon_side_asn)}"


def test_rendered_tunnel_options_sites_and_asns_are_the_plans(cluster, rendered):
    asns = tunnels.amazon_asns(cluster)
    assert len(set(asns.values())) == len(cluster.regions)
    assert not set(asns.values()) & {s.gateway.bgp_asn for s in cluster.sites}
    for region in cluster.regions:
        vpn = module_calls(rendered / region.name)["vpn"]
        assert vpn["tunnel"] == cluster.vpn.tunnel.model_dump()
        assert vpn["psk_ssm_prefix"] == cluster.vpn.psk_ssm_prefix
        assert vpn["amazon_side_asn"] == asns[region.name]
        assert vpn["sites"] == {
            s.name: {
                "cidr": s.cidr,
                "public_ip": s.gateway.public_ip,
                "bgp_asn": s.gateway.bgp_asn,
                "inside_cidrs": tunnels.inside_cidrs(cluster, region.name, s.name),
            }
            for s in cluster.sites
        }


def test_inside_cidrs_of_a_gateway_never_overlap_nor_hit_aws_reserved_ranges():
    data = example_spec_data()
    lab = data["sites"][0]
    for i in range(3):  # three more sites, each with its own gateway
        gateway = dict(lab["gateway"], public_ip=f"198.51.100.{20 + i}", private_ip=f"10.{40 + i}.0.1")
        server = {"name": f"gw-{i}", "ip": f"10.{40 + i}.0.1", "gpus": 0, "roles": ["gateway"]}
        data["sites"].append(
            {"name": f"site{i}", "cidr": f"10.{40 + i}.0.0/20", "gateway": gateway, "servers": [server]}
        )
    cluster = spec_from_data(data, "test")
    reserved = [ipaddress.ip_network(f"169.254.{i}.0/30") for i in range(6)]
    reserved.append(ipaddress.ip_network("169.254.169.252/30"))
    nets = [
        ipaddress.ip_network(c)
        for r in cluster.regions
        for s in cluster.sites
        for c in tunnels.inside_cidrs(cluster, r.name, s.name)
    ]
    assert len(nets) == 2 * len(cluster.regions) * len(cluster.sites)
    assert all(n.prefixlen == 30 and n.subnet_of(ipaddress.ip_network("169.254.0.0/16")) for n in nets)
    assert not [(a, b) for a, b in itertools.combinations(nets, 2) if a.overlaps(b)]
    assert not [n for n in nets for r in reserved if n.overlaps(r)]
    assert tunnels.addresses("169.254.10.4/30") == ("169.254.10.5", "169.254.10.6")


def test_no_static_routes_bgp_routes_propagate_into_the_private_tables():
    assert list(resources(MODULES / "vpn", "aws_vpn_connection_route")) == []
    ((_, propagation),) = resources(MODULES / "vpn", "aws_vpn_gateway_route_propagation")
    assert propagation["for_each"] == "${var.private_route_table_ids}"


def test_preshared_keys_go_to_ssm_securestrings_under_the_conventional_name():
    ((name, param),) = resources(MODULES / "vpn", "aws_ssm_parameter")
    assert param["type"] == "SecureString"
    assert (
        param["name"] == "${var.psk_ssm_prefix}/${var.region}/${each.value.site}/tunnel${each.value.tunnel}"
    )
    assert "tunnel1_preshared_key" in param["value"] and "tunnel2_preshared_key" in param["value"]


def test_site_vpn_tunnels_output_has_the_chef_fields_and_no_secret(cluster, rendered):
    out = outputs(MODULES / "vpn")["site_vpn_tunnels"]
    text = str(out["value"])
    for field in ("outside_ip", "inside_cidr", "psk_parameter", "aws_asn"):
        assert len(re.findall(rf"\b{field} =", text)) == 2, field
    assert "preshared_key" not in text and "sensitive" not in out
    for region in cluster.regions:
        root = outputs(rendered / region.name)["site_vpn_tunnels"]
        assert root["value"] == "${module.vpn.site_vpn_tunnels}"


def test_no_output_anywhere_exposes_a_key():
    for module in MODULES.iterdir():
        for name, body in outputs(module).items():
            value = str(body["value"])
            assert "preshared_key" not in value and "private_key" not in value, f"{module.name}.{name}"


def test_client_vpn_is_mutual_tls_and_routes_every_vpc_site_and_the_pods(cluster, rendered):
    ((name, endpoint),) = resources(MODULES / "client_vpn", "aws_ec2_client_vpn_endpoint")
    auth = endpoint["authentication_options"][0]
    assert auth["type"] == "certificate-authentication"
    assert auth["root_certificate_chain_arn"] == "${var.client_root_certificate_arn}"
    call = module_calls(rendered / cluster.primary_region)["client_vpn"]
    assert call["server_certificate_arn"] == "${var.client_vpn_server_certificate_arn}"
    others = {r.cidr for r in cluster.regions if r.name != cluster.primary_region}
    expected = others | {s.cidr for s in cluster.sites} | {cluster.kubernetes.pod_cidr}
    assert set(call["routes"].values()) == expected
    assert call["client_cidr"] == cluster.vpn.client_cidr
    main = parse(MODULES / "client_vpn/main.tf")["locals"][0]
    assert main["destinations"] == "${merge({local-vpc = var.vpc_cidr}, var.routes)}"


def test_a_full_tunnel_routes_laptops_to_the_internet_through_the_vpc(tmp_path):
    data = example_spec_data()
    data["vpn"]["split_tunnel"] = False
    cluster = spec_from_data(data, "cluster.yaml")
    render(cluster, regions=[cluster.primary_region], out_dir=tmp_path)
    call = module_calls(tmp_path / cluster.primary_region)["client_vpn"]
    assert call["split_tunnel"] is False
    assert call["routes"]["internet"] == "0.0.0.0/0"
