"""Site-to-site VPN: tunnels pinned to the spec (strongSwan uses the same), keys only in SSM, and the output
Chef reads carries names, never secrets."""

from provision.loader import spec_from_data
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


def test_both_tunnels_are_pinned_to_the_spec_fields():
    ((name, vpn),) = resources(MODULES / "vpn", "aws_vpn_connection")
    assert vpn["static_routes_only"] is True
    for tunnel in ("tunnel1", "tunnel2"):
        assert vpn[f"{tunnel}_ike_versions"] == "${local.ike}"
        for suffix, field in PINNED.items():
            assert vpn[f"{tunnel}_{suffix}"] == f"${{var.tunnel.{field}}}", f"{tunnel}_{suffix}"
    assert 'ike      = ["ikev${var.tunnel.ike_version}"]' in (MODULES / "vpn/main.tf").read_text()


def test_rendered_tunnel_options_and_sites_are_the_specs(cluster, rendered):
    for region in cluster.regions:
        vpn = module_calls(rendered / region.name)["vpn"]
        assert vpn["tunnel"] == cluster.vpn.tunnel.model_dump()
        assert vpn["psk_ssm_prefix"] == cluster.vpn.psk_ssm_prefix
        assert vpn["sites"] == {
            s.name: {"cidr": s.cidr, "public_ip": s.gateway.public_ip, "bgp_asn": s.gateway.bgp_asn}
            for s in cluster.sites
        }


def test_static_route_to_each_site_network():
    ((name, route),) = resources(MODULES / "vpn", "aws_vpn_connection_route")
    assert route["for_each"] == "${var.sites}" and route["destination_cidr_block"] == "${each.value.cidr}"


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
    for field in ("outside_ip", "inside_cidr", "psk_parameter"):
        assert text.count(field) == 2, field
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
