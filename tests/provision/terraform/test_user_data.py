"""User data as Terraform renders it: valid bash (shellcheck-clean) with the lines each script must have (the pod
gateway's forwarding and masquerade, the SSH machines' EFS homes and users). The nodes' join is
modules/node_join: test_node_join.py and test_provider_id.py run it."""

import json
import subprocess

import pytest

from provision.terraform.hcl import inline
from tests.provision.terraform.tf_files import MODULES
from tests.support import ROOT, load_yaml, require_tool

# the pod gateway's and SSH machines' (forwarding, masquerade, EFS homes, users)
CASES = load_yaml(ROOT / "tests/provision/terraform/data/researchers_user_data.yaml")


def _render(terraform: str, template: str, values: dict, cwd) -> str:
    expression = f"jsonencode(templatefile({inline(str(MODULES / template))}, {inline(values)}))"
    result = subprocess.run(
        [terraform, "console"], input=expression, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(json.loads(result.stdout))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_user_data_is_valid_bash_with_the_expected_arguments(case, tmp_path):
    terraform = require_tool("terraform")
    script = _render(terraform, case["template"], case["vars"], tmp_path)
    for text in case.get("expect", []):
        assert text in script
    for text in case.get("absent", []):
        assert text not in script
    path = tmp_path / "user-data.sh"
    path.write_text(case.get("wrap", "") + script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    result = subprocess.run([shellcheck, "-S", "warning", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
