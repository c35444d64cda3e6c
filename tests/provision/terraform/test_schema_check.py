"""The offline check against the AWS provider's schema and the AWS APIs' value rules: zero problems on every
module and rendered root, and each broken fixture (data/schema_cases.yaml) caught with the right line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterspec.errors import UserError
from provision.terraform import provider_schema, schema_check
from provision.terraform.settings import MODULES, PROVIDER_SCHEMA
from tests.provision.terraform.conftest import DATA
from tests.support import ROOT, load_yaml

pytestmark = pytest.mark.tool
CASES = load_yaml(DATA / "schema_cases.yaml")


@pytest.fixture(scope="module")
def schema() -> dict:
    if not PROVIDER_SCHEMA.is_file():
        reason = f"{PROVIDER_SCHEMA.relative_to(ROOT)} is missing (run `make tools`)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must have it")
        pytest.skip(reason)
    return provider_schema.load(PROVIDER_SCHEMA)


def test_every_module_and_rendered_root_passes(schema, rendered):
    roots = sorted(p for p in rendered.iterdir() if p.is_dir() and list(p.glob("*.tf")))
    assert len(roots) >= 4
    problems = schema_check.check(schema, MODULES, roots, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


PINNED = 'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws", version = "~> 6.25" }\n  }\n}\n'


def _write(tmp_path: Path, files: dict[str, str]) -> None:
    (tmp_path / "modules").mkdir()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for directory in {(tmp_path / name).parent for name in files}:
        if not (directory / "versions.tf").exists():
            (directory / "versions.tf").write_text(PINNED)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_broken_fixture_is_caught(schema, tmp_path, case):
    _write(tmp_path, case["files"])
    problems = schema_check.check(schema, tmp_path / "modules", [tmp_path / "root"], tmp_path)
    unmatched = list(problems)
    for want in case["expect"]:
        hit = next((p for p in unmatched if p.line == want["line"] and want["contains"] in str(p)), None)
        assert hit, f"{case['name']}: expected line {want['line']} {want['contains']!r}; got\n" + "\n".join(
            map(str, problems)
        )
        unmatched.remove(hit)
    assert not unmatched, f"{case['name']}: unexpected\n" + "\n".join(map(str, unmatched))


def test_each_problem_is_one_line_naming_file_line_resource_and_argument(schema, tmp_path):
    _write(tmp_path, {"root/main.tf": 'resource "aws_vpc" "x" {\n  cidr_blok = "10.0.0.0/16"\n}\n'})
    (problem,) = schema_check.check(schema, tmp_path / "modules", [tmp_path / "root"], tmp_path)
    assert (
        str(problem) == "root/main.tf:2: aws_vpc.x: cidr_blok: unknown argument; did you mean 'cidr_block'?"
    )


def test_a_file_that_does_not_parse_is_one_problem(schema, tmp_path):
    _write(tmp_path, {"root/main.tf": 'resource "aws_vpc" "x" {\n  cidr_block = \n'})
    (problem,) = schema_check.check(schema, tmp_path / "modules", [tmp_path / "root"], tmp_path)
    assert problem.path == "root/main.tf" and problem.line == 2 and "does not parse" in problem.message


# Facts from the provider's documentation (registry.terraform.io/providers/hashicorp/aws/6.25.0) that the
# extraction must reproduce: required, computed-only, nested blocks and their max_items.
def test_the_extracted_schema_matches_the_providers_documentation(schema):
    assert schema["provider_version"] == "6.25.0"
    assert schema["package"] == f"{provider_schema.PACKAGE}@{provider_schema.PACKAGE_VERSION}"
    asg = schema["resource"]["aws_autoscaling_group"]
    assert asg["args"]["max_size"] == asg["args"]["min_size"] == "required"
    assert asg["args"]["desired_capacity"] == "optional" and "arn" in asg["computed"]
    lt = schema["resource"]["aws_launch_template"]["blocks"]["metadata_options"]
    assert lt["max"] == 1 and "http_put_response_hop_limit" in lt["body"]["args"]
    assert schema["resource"]["aws_lb_listener"]["blocks"]["default_action"]["min"] == 1
    assert "vpc" not in schema["resource"]["aws_eip"]["args"]  # removed in 6.0
    endpoint = schema["resource"]["aws_vpc_endpoint"]
    assert endpoint["kinds"]["route_table_ids"] == "list" and endpoint["kinds"]["tags"] == "map"
    assert "vpc_id" not in endpoint["kinds"]  # a single value
    assert "region" in schema["resource"]["aws_vpc"]["args"]  # added in 6.0
    vpn = schema["resource"]["aws_vpn_connection"]
    assert (
        "tunnel1_address" in vpn["computed"]
        and "outside_ip_address" in vpn["computed"]["vgw_telemetry"]["computed"]
    )
    policy = schema["data"]["aws_iam_policy_document"]
    assert "json" in policy["computed"]
    assert policy["blocks"]["statement"]["body"]["blocks"]["condition"]["body"]["args"]["test"] == "required"
    assert len(schema["resource"]) > 1500 and len(schema["data"]) > 600


@pytest.mark.parametrize(
    ("constraint", "admitted"),
    [("~> 6.25", True), ("~> 6.26", False), ("~> 5.80", False), (">= 6.0, < 7.0", True), ("6.25.0", True)],
)
def test_version_constraints(constraint, admitted):
    assert schema_check.admits(constraint, "6.25.0") is admitted


def test_the_task_prints_each_problem_and_a_summary(schema, cluster, tmp_path, capsys):
    _write(
        tmp_path,
        {"modules/m/main.tf": 'resource "aws_vpc" "x" {\n  cidr_block = "10.0.0.0/16"\n  vpc = 1\n}\n'},
    )
    problems = schema_check.run(cluster, tmp_path / "out", tmp_path / "modules", PROVIDER_SCHEMA, tmp_path)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("modules/m/main.tf:3: aws_vpc.x: vpc: unknown argument; ")
    assert len(problems) == 1 and printed[-2].startswith("1 problems in 1 modules and 4 rendered roots")
    assert printed[-1].startswith("0 cross-resource problems; checked: ")


def test_the_task_without_a_schema_says_to_run_make_tools(cluster, tmp_path):
    with pytest.raises(UserError, match=r"run `make tools`"):
        schema_check.run(cluster, tmp_path / "out", MODULES, tmp_path / "missing.json.gz", tmp_path)
