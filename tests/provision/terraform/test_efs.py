"""EFS in the rendered Terraform: every researcher's access points, the file-system policy and the SSH machines'
role evaluated request by request (data/efs_access_cases.yaml), a mount target in every zone, and the other
regions resolving the primary file system's name through their own private zone."""

from __future__ import annotations

import fnmatch
import json
import re

import pytest

from tests.provision.terraform.tf_files import MODULES, code, module_calls, outputs, parse, resources
from tests.support import ROOT, load_yaml

CASES = load_yaml(ROOT / "tests/provision/terraform/data/efs_access_cases.yaml")
ACCOUNT = "123456789012"
FS_ARN = f"arn:aws:elasticfilesystem:us-west-2:{ACCOUNT}:file-system/fs-0123456789abcdef0"
ROLES = {
    "node": f"arn:aws:iam::{ACCOUNT}:role/dlr-node",
    "control_plane": f"arn:aws:iam::{ACCOUNT}:role/dlr-control-plane",
    "ssh": f"arn:aws:iam::{ACCOUNT}:role/dlr-ssh-machines",
    "csi": f"arn:aws:iam::{ACCOUNT}:role/dlr-efs-csi-node",
    "autoscaler": f"arn:aws:iam::{ACCOUNT}:role/dlr-autoscaler",
}
ACCESS_POINTS = {
    kind: f"arn:aws:elasticfilesystem:us-west-2:{ACCOUNT}:access-point/fsap-{n:017x}"
    for n, kind in enumerate(["job", "shell", "datasets", "other_job"])
}
JOB_APS = [ACCESS_POINTS["job"], ACCESS_POINTS["other_job"]]
# What the references in the policies stand for in this evaluation.
VALUES = {
    "${aws_efs_file_system.this.arn}": [FS_ARN],
    "${var.efs_file_system_arn}": [FS_ARN],
    "${var.job_role_arns}": [ROLES["csi"]],
    "${local.mount_roles}": [ROLES["csi"], ROLES["ssh"]],
    "${local.shell_roles}": [ROLES["ssh"]],
    "${local.job_ap_arns}": [*JOB_APS, ACCESS_POINTS["datasets"]],
    "${local.shell_ap_arns}": [ACCESS_POINTS["shell"], ACCESS_POINTS["datasets"]],
    "${var.efs_access_point_arns}": [ACCESS_POINTS["shell"], ACCESS_POINTS["datasets"]],
    "${var.cluster}": ["dlr"],
}


def _values(v) -> list[str]:
    if isinstance(v, str):
        return VALUES[v] if v.startswith("${") else [v]
    return [x for item in v for x in _values(item)]


def _data(path) -> dict[str, dict]:
    return {n: b for e in parse(path).get("data", []) for named in e.values() for n, b in named.items()}


def _statements(path, name) -> list[dict]:
    return _data(path)[name]["statement"]


def _condition_holds(cond: dict, context: dict) -> bool:
    test, key, values = cond["test"], cond["variable"], _values(cond["values"])
    present = key in context
    if test == "Null":
        return (not present) == (values == ["true"])
    if test in ("ArnNotEquals", "StringNotEquals"):
        return not present or all(not fnmatch.fnmatchcase(context[key], v) for v in values)
    if not present:
        return False
    if test == "Bool":
        return str(context[key]).lower() in values
    if test in ("StringEquals", "ArnEquals"):
        return context[key] in values
    raise AssertionError(f"no evaluation for condition operator {test}")


def _matches(
    stmt: dict, action: str, context: dict, principal_arn: str | None, resource_policy: bool
) -> bool:
    if not any(fnmatch.fnmatchcase(action, a) for a in _values(stmt["actions"])):
        return False
    if not any(fnmatch.fnmatchcase(FS_ARN, r.replace("${local.p}", "aws").replace("${local.account}", ACCOUNT))
               for r in _values(stmt["resources"])):  # fmt: skip
        return False
    if resource_policy:
        ids = [i for p in stmt["principals"] for i in _values(p["identifiers"])]
        if "*" not in ids and principal_arn not in ids:
            return False
    context = {**context, "aws:ResourceTag/research.cluster/cluster": "dlr"}  # the file system's tag
    return all(_condition_holds(c, context) for c in stmt.get("condition", []))


def _decide(case: dict) -> bool:
    principal_arn = ROLES.get(case["principal"])
    context = {"aws:SecureTransport": case["tls"], "elasticfilesystem:AccessedViaMountTarget": True}
    if principal_arn:
        context["aws:PrincipalArn"] = principal_arn
    if case["access_point"] != "none":
        context["elasticfilesystem:AccessPointArn"] = ACCESS_POINTS[case["access_point"]]
    action = f"elasticfilesystem:{case['action']}"
    policies = [(_statements(MODULES / "efs/main.tf", "efs"), True)]
    if case["principal"] == "ssh":
        policies.append((_statements(MODULES / "ssh_machines/main.tf", "mount"), False))
    if case["principal"] == "csi":  # its identity policy (terraform/modules/iam/efs_csi.tf)
        policies.append((_statements(MODULES / "iam/efs_csi.tf", "efs_csi"), False))
    matched = [
        s.get("effect", "Allow")
        for statements, is_resource in policies
        for s in statements
        if _matches(s, action, context, principal_arn, is_resource)
    ]
    return "Deny" not in matched and "Allow" in matched


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_file_system_access(case):
    assert _decide(case) is case["allowed"]


def test_ssh_role_may_only_mount_and_write_through_its_access_points():
    (stmt,) = _statements(MODULES / "ssh_machines/main.tf", "mount")
    assert sorted(stmt["actions"]) == ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    assert stmt["condition"] == [
        {
            "test": "ArnEquals",
            "variable": "elasticfilesystem:AccessPointArn",
            "values": "${var.efs_access_point_arns}",
        }
    ]
    (machine,) = (b for _, b in resources(MODULES / "ssh_machines", "aws_instance"))
    assert machine["iam_instance_profile"] == "${aws_iam_instance_profile.machine.name}"


def test_access_points_own_each_researchers_directories():
    aps = dict(resources(MODULES / "efs", "aws_efs_access_point"))
    job, shell = aps["job"], aps["shell"]
    assert job["posix_user"] == [{"uid": "${each.value.uid}", "gid": "${each.value.uid}"}]
    assert "posix_user" not in shell  # shared machines: each request keeps its own uid
    for ap in (job, shell):
        (root,) = ap["root_directory"]
        assert root["path"] == "${each.value.path}"
        assert root["creation_info"] == [
            {"owner_uid": "${each.value.uid}", "owner_gid": "${each.value.uid}", "permissions": "0750"}
        ]


def test_primary_root_passes_every_user_and_mounts_in_every_zone(cluster, rendered):
    primary = rendered / cluster.primary_region
    efs = module_calls(primary)["efs"]
    assert efs["users"] == [{"name": u.name, "uid": u.uid} for u in cluster.users]
    assert efs["subnet_ids"] == "${module.network.private_subnet_ids}"  # one subnet per zone
    (target,) = (b for _, b in resources(MODULES / "efs", "aws_efs_mount_target"))
    assert target["for_each"] == "${var.subnet_ids}"
    (vpc,) = (b for _, b in resources(MODULES / "network", "aws_vpc"))
    assert vpc["enable_dns_support"] is True and vpc["enable_dns_hostnames"] is True  # the zonal EFS answer
    assert "efs_peer_dns" not in module_calls(primary)  # Amazon's own answer stays in the primary VPC
    if cluster.researchers.ssh_machines:
        ssh = module_calls(primary)["ssh_machines"]
        assert ssh["efs_access_points"] == "${module.efs.shell_access_points}"
        assert efs["shell_access_points"] is True


def test_other_regions_resolve_the_primary_file_system_by_name(cluster, rendered):
    others = [r.name for r in cluster.regions if r.name != cluster.primary_region]
    assert others, "the shipped spec has more than one region"
    for region in others:
        peer = module_calls(rendered / region)["efs_peer_dns"]
        assert peer["file_system_dns_name"] == "${data.terraform_remote_state.primary.outputs.efs_dns_name}"
        assert (
            peer["mount_target_ips"] == "${data.terraform_remote_state.primary.outputs.efs_mount_target_ips}"
        )
        primary_state = _data(rendered / region / "state.tf")["primary"]["config"]
        (backend,) = parse(rendered / cluster.primary_region / "versions.tf")["terraform"][0]["backend"]
        assert primary_state["key"] == backend["s3"]["key"]  # the primary root's own state
    (record,) = (b for _, b in resources(MODULES / "efs_peer_dns", "aws_route53_record"))
    assert record["name"] == "${var.file_system_dns_name}" and record["type"] == "A"


def _iam_json(statements: list[dict], resource_policy: bool) -> str:
    """The policy document Terraform's aws_iam_policy_document makes of these statements (the references
    replaced by the example ARNs above; a list of one value becomes that value, as the provider writes it)."""

    def one(values: list[str]):
        return values[0] if len(values) == 1 else values

    out = []
    for s in statements:
        resources = [
            r.replace("${local.p}", "aws").replace("${local.account}", ACCOUNT)
            for r in _values(s["resources"])
        ]
        st = {"Sid": s["sid"], "Effect": s.get("effect", "Allow"), "Action": one(_values(s["actions"])),
              "Resource": one(resources)}  # fmt: skip
        if resource_policy:
            st["Principal"] = {p["type"]: one(_values(p["identifiers"])) for p in s["principals"]}
        conditions: dict = {}
        for c in s.get("condition", []):
            conditions.setdefault(c["test"], {})[c["variable"]] = one(_values(c["values"]))
        if conditions:
            st["Condition"] = conditions
        out.append(st)
    return json.dumps({"Version": "2012-10-17", "Statement": out})


@pytest.mark.parametrize(
    "path,name,resource_policy",
    [
        ("efs/main.tf", "efs", True),
        ("ssh_machines/main.tf", "mount", False),
        ("iam/efs_csi.tf", "efs_csi", False),
    ],
    ids=["file-system policy", "SSH machines' role", "EFS CSI node role"],
)
def test_policies_pass_parliament(path, name, resource_policy):
    """parliament (duo-labs), an IAM linter built from AWS's Service Authorization Reference: every action
    exists, every condition key applies to its actions with an operator of its type."""
    from parliament import analyze_policy_string

    doc = _iam_json(_statements(MODULES / path, name), resource_policy)
    findings = analyze_policy_string(doc, include_community_auditors=False).findings
    assert [(f.issue, f.detail) for f in findings] == []


def test_what_other_regions_read_from_the_primary_state_is_an_output_of_the_primary(cluster, rendered):
    produced = set(outputs(rendered / cluster.primary_region))
    for region in (r.name for r in cluster.regions if r.name != cluster.primary_region):
        text = "\n".join(code(p) for p in (rendered / region).glob("*.tf"))
        read = set(re.findall(r"data\.terraform_remote_state\.primary\.outputs\.(\w+)", text))
        assert read and read <= produced, read - produced
