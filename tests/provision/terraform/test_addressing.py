"""The provider-free modules pass `terraform test` offline, and the address module's test cases agree with
clusterspec/addresses.py, so Terraform and Python compute the same subnets."""

import re
import subprocess

import pytest

from clusterspec.addresses import zone_subnets
from tests.provision.terraform.tf_files import MODULES
from tests.support import require_tool

TFTEST = MODULES / "addressing/tests/addressing.tftest.hcl"
RUN = re.compile(r'^run "(?P<name>[^"]+)" \{\n(?P<body>.*?)^\}', re.S | re.M)


def _cases():
    out = []
    for m in RUN.finditer(TFTEST.read_text()):
        body = m["body"]
        if "expect_failures" in body:
            continue
        vpc = re.search(r'vpc_cidr\s*=\s*"([^"]+)"', body)[1]
        zones = re.findall(r'"([^"]+)"', re.search(r"zones\s*=\s*\[([^\]]*)\]", body)[1])
        expected = {}
        for kind in ("private", "public"):
            block = re.search(rf"output\.{kind}_subnets == \{{(.*?)\}}", body, re.S)[1]
            expected[kind] = dict(re.findall(r'"([^"]+)"\s*=\s*"([^"]+)"', block))
        out.append(pytest.param(vpc, zones, expected, id=m["name"]))
    return out


@pytest.mark.parametrize(("vpc", "zones", "expected"), _cases())
def test_tftest_expectations_match_the_python_address_plan(vpc, zones, expected):
    plan = zone_subnets(vpc, zones)
    assert expected["private"] == {z: private for z, private, _ in plan}
    assert expected["public"] == {z: public for z, _, public in plan}


@pytest.mark.parametrize("module", ["addressing", "node_template"])
def test_provider_free_module_passes_terraform_test_offline(module):
    terraform = require_tool("terraform")
    result = subprocess.run(
        [terraform, "test", "-no-color"], cwd=MODULES / module, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"Success! \d+ passed, 0 failed", result.stdout)


def test_rendered_network_modules_get_the_spec_cidrs_and_zones(cluster, rendered):
    from tests.provision.terraform.tf_files import module_calls

    for region in cluster.regions:
        network = module_calls(rendered / region.name)["network"]
        assert network["vpc_cidr"] == region.cidr
        assert network["zones"] == region.zones
