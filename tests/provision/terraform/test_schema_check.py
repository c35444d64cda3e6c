"""The offline check against the AWS provider's schema and the AWS APIs' value rules: zero problems on every
module and rendered root, and each broken fixture (data/schema_cases.yaml) caught with the right line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterspec.errors import UserError
from provision.terraform import mirror, provider_schema, schema_check
from provision.terraform.settings import AWS_PROVIDER_VERSION, MODULES
from tests.provision.terraform.conftest import DATA
from tests.support import ROOT, load_yaml

pytestmark = pytest.mark.tool
CASES = load_yaml(DATA / "schema_cases.yaml")


def _schema_path() -> Path:
    """What `invoke check-terraform` reads: the mirror's provider when this machine has one, else the npm copy."""
    path, _ = mirror.check_schema()
    if not path.is_file():
        reason = f"{path} is missing (run `make tools`)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must have it")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def schema() -> dict:
    return provider_schema.load(_schema_path())


def test_every_module_and_rendered_root_passes(schema, rendered):
    roots = sorted(p for p in rendered.iterdir() if p.is_dir() and list(p.glob("*.tf")))
    assert len(roots) >= 4
    problems = schema_check.check(schema, MODULES, roots, ROOT)
    assert not problems, "\n" + "\n".join(map(str, problems))


PINNED = (
    f'terraform {{\n  required_providers {{\n    aws = {{ source = "hashicorp/aws", version = "{AWS_PROVIDER_VERSION}" }}'
    "\n  }\n}\n"
)


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
    if case.get("major") and int(schema["provider_version"].split(".")[0]) != case["major"]:
        pytest.skip(f"a fact of hashicorp/aws {case['major']}.x; the schema is {schema['provider_version']}")
    _write(tmp_path, case["files"])
    problems = schema_check.check(schema, tmp_path / "modules", [tmp_path / "root"], tmp_path)
    unmatched = list(problems)
    for want in case["expect"]:
        text = want["contains"].replace("{version}", schema["provider_version"])
        hit = next((p for p in unmatched if p.line == want["line"] and text in str(p)), None)
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


# Facts from the provider's documentation (registry.terraform.io/providers/hashicorp/aws/<version>) that the
# schema must reproduce, from the mirror (5.100.0) or from npm (6.25.0): required, computed-only, nested blocks and
# their max_items, and what 6.0 changed.
def test_the_schema_matches_the_providers_documentation(schema):
    major = int(schema["provider_version"].split(".")[0])
    assert schema_check.admits(AWS_PROVIDER_VERSION, schema["provider_version"])
    asg = schema["resource"]["aws_autoscaling_group"]
    assert asg["args"]["max_size"] == asg["args"]["min_size"] == "required"
    assert asg["args"]["desired_capacity"] == "optional" and "arn" in asg["computed"]
    lt = schema["resource"]["aws_launch_template"]["blocks"]["metadata_options"]
    assert lt["max"] == 1 and "http_put_response_hop_limit" in lt["body"]["args"]
    assert schema["resource"]["aws_lb_listener"]["blocks"]["default_action"]["min"] == 1
    assert ("vpc" in schema["resource"]["aws_eip"]["args"]) is (major < 6)  # removed in 6.0
    endpoint = schema["resource"]["aws_vpc_endpoint"]
    assert endpoint["kinds"]["route_table_ids"] == "list" and endpoint["kinds"]["tags"] == "map"
    assert "vpc_id" not in endpoint["kinds"]  # a single value
    assert ("region" in schema["resource"]["aws_vpc"]["args"]) is (major >= 6)  # added in 6.0
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


@pytest.mark.parametrize("version", ["5.100.0", "6.25.0", "6.40.1"])
def test_the_modules_constraint_admits_the_mirror_and_the_registry(version):
    """5.100.0: the mirror on the machines without the registry; 6.x: what `terraform init` gets from it."""
    assert schema_check.admits(AWS_PROVIDER_VERSION, version)
    assert not schema_check.admits(AWS_PROVIDER_VERSION, "7.0.0") and not schema_check.admits(
        AWS_PROVIDER_VERSION, "5.99.0"
    )


def test_the_task_prints_each_problem_and_a_summary(schema, cluster, tmp_path, capsys):
    _write(
        tmp_path,
        {"modules/m/main.tf": 'resource "aws_vpc" "x" {\n  cidr_block = "10.0.0.0/16"\n  vpc = 1\n}\n'},
    )
    problems = schema_check.run(cluster, tmp_path / "out", tmp_path / "modules", _schema_path(), tmp_path)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("modules/m/main.tf:3: aws_vpc.x: vpc: unknown argument; ")
    assert len(problems) == 1 and printed[-2].startswith("1 problems in 1 modules and 4 rendered roots")
    assert printed[-1].startswith("0 cross-resource problems; checked: ")


def test_the_task_without_a_schema_says_to_run_make_tools(cluster, tmp_path):
    with pytest.raises(UserError, match=r"run `make tools`"):
        schema_check.run(cluster, tmp_path / "out", MODULES, tmp_path / "missing.json.gz", tmp_path)
