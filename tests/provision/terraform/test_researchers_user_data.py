"""The pod gateway's and the SSH machines' user data as Terraform renders it: valid bash, shellcheck-clean, with
the forwarding, masquerade, taint, EFS homes and users it must set up."""

import subprocess

import pytest
import yaml

from tests.provision.terraform.test_user_data import _render
from tests.support import ROOT, require_tool

CASES = yaml.safe_load((ROOT / "tests/provision/terraform/data/researchers_user_data.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_user_data_is_valid_bash_with_the_expected_lines(case, tmp_path):
    terraform = require_tool("terraform")
    script = _render(terraform, case["template"], case["vars"], tmp_path)
    for text in case.get("expect", []):
        assert text in script
    for text in case.get("absent", []):
        assert text not in script
    path = tmp_path / "user-data.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    result = subprocess.run([shellcheck, "-S", "warning", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
