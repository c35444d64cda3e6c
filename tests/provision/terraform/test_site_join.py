"""The site's way in, AWS side: a Resolver inbound endpoint open to the sites only, and an IAM Roles Anywhere
role that reads (never writes) the join parameters and its own site's tunnel keys. Control-plane IAM: only the
control plane writes the join secrets; nodes and sites cannot read the certificate key."""

from tests.provision.terraform.tf_files import MODULES, module_calls, parse, resources


def _statements(path, name: str) -> list[dict]:
    for entry in parse(path).get("data", []):
        if name in entry.get("aws_iam_policy_document", {}):
            return entry["aws_iam_policy_document"][name]["statement"]
    raise AssertionError(f"no policy document {name} in {path}")


def test_resolver_is_inbound_in_two_zones_and_open_to_the_sites_only(cluster, rendered):
    ((_, endpoint),) = resources(MODULES / "resolver", "aws_route53_resolver_endpoint")
    assert endpoint["direction"] == "INBOUND" and endpoint["protocols"] == ["Do53"]
    rules = dict(resources(MODULES / "resolver", "aws_vpc_security_group_ingress_rule"))
    assert {r["ip_protocol"] for r in rules.values()} == {"udp", "tcp"}
    assert all(r["from_port"] == r["to_port"] == 53 for r in rules.values())
    call = module_calls(rendered / cluster.primary_region)["resolver"]
    assert call["client_cidrs"] == [s.cidr for s in cluster.sites]
    assert str(list(cluster.region(cluster.primary_region).zones[:2])).replace("'", '"') in call["subnet_ids"]
    for region in cluster.regions[1:]:
        assert "resolver" not in module_calls(rendered / region.name)


def test_site_role_reads_only_and_only_its_own_sites_keys(cluster, rendered):
    statements = _statements(MODULES / "site_access/main.tf", "site")
    actions = {a for s in statements for a in s["actions"]}
    # the tunnel keys and join parameters; and the lab's images from its ECR (issue 36: the lab servers' kubelets
    # pull the mirrored add-ons and the standard image with the site role)
    assert actions == {"ssm:GetParameter", "kms:Decrypt", "ecr:GetAuthorizationToken", "ecr:BatchGetImage",
                       "ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer"}  # fmt: skip
    (keys,) = [s for s in statements if s["sid"] == "GatewaysReadOwnSitesTunnelKeys"]
    assert keys["resources"] == [
        "${local.ssm}${var.psk_ssm_prefix}/*/$${aws:PrincipalTag/x509Subject/OU}/tunnel*"
    ]
    # issue 36: only the site's gateway (certificate CN) reads them
    (gateway,) = keys["condition"]
    assert (gateway["variable"], gateway["values"]) == ("aws:PrincipalTag/x509Subject/CN", "${var.gateways}")
    assert module_calls(rendered / "global")["site_access"]["gateways"] == [
        v.name for s in cluster.sites for v in s.servers if "gateway" in v.roles
    ]
    (trust,) = _statements(MODULES / "site_access/main.tf", "assume")
    assert trust["principals"][0]["identifiers"] == ["rolesanywhere.amazonaws.com"]
    conditions = {c["variable"]: c for c in trust["condition"]}
    assert conditions["aws:SourceArn"]["values"] == ["${aws_rolesanywhere_trust_anchor.sites.arn}"]
    assert conditions["aws:PrincipalTag/x509Subject/OU"]["values"] == "${var.sites}"
    call = module_calls(rendered / "global")["site_access"]
    assert call["sites"] == [s.name for s in cluster.sites]
    (join,) = [s for s in statements if s["sid"] == "ReadJoinParameters"]
    assert join["resources"] == [
        "${local.ssm}/${var.cluster}/kubeadm/join-token",
        "${local.ssm}/${var.cluster}/kubeadm/ca-cert-hash",
    ]


def test_only_the_control_plane_writes_join_secrets_and_only_it_reads_the_certificate_key():
    iam = MODULES / "iam"
    node = _statements(iam / "main.tf", "node")
    assert not [a for s in node for a in s["actions"] if a.startswith("ssm:") and a != "ssm:GetParameter"]
    readable = {r for s in node if "ssm:GetParameter" in s["actions"] for r in s["resources"]}
    assert not [r for r in readable if "certificate-key" in r or r.endswith("/*")]
    control = _statements(iam / "control_plane.tf", "control_plane")
    writes = [s for s in control if "ssm:PutParameter" in s["actions"]]
    written = {r for s in writes for r in s["resources"]}
    assert written == {
        "${local.kubeadm}/join-token",
        "${local.kubeadm}/ca-cert-hash",
        "${local.kubeadm}/certificate-key",
        "${local.ssm}/control-plane/init",
        "${local.ssm}/control-plane/status/member-*",
        "${local.ssm}/control-plane/admin-kubeconfig",
        "${local.ssm}/control-plane/sa-pub",
        "${local.ssm}/control-plane/join-request",  # issue 26: certificates only while a member joins
        "${local.kubeadm}/encryption-key",  # issue 36: etcd's encryption at rest, made by member 0 at init
    }


def test_control_plane_instances_keep_imds_to_the_host():
    ((_, member),) = resources(MODULES / "control_plane", "aws_instance")
    (options,) = member["metadata_options"]
    assert options["http_tokens"] == "required" and options["http_put_response_hop_limit"] == 1
    assert member["tags"]["research.cluster/control-plane"] == "${var.cluster}"
