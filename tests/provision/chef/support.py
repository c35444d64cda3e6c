"""Helpers of the Chef tests: Terraform outputs on disk, attributes, templates rendered with Ruby's ERB."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import yaml

from provision.chef.attributes import write_node_attributes
from tests.support import ROOT, require_tool, set_path

HERE = ROOT / "tests/provision/chef"
COOKBOOK = ROOT / "chef/cookbooks/cluster_node"
OUTPUTS = yaml.safe_load((HERE / "terraform_outputs.yaml").read_text())
# the regions' outputs only (the file also holds the global root's)
REGION_OUTPUTS = {k: v for k, v in OUTPUTS.items() if k != "global"}


def write_outputs(directory: Path, documents: dict | None = None) -> Path:
    for region, doc in (documents or OUTPUTS).items():
        (directory / region).mkdir(parents=True, exist_ok=True)
        (directory / region / "outputs.json").write_text(json.dumps(doc))
    return directory


def outputs_copy() -> dict:
    return copy.deepcopy(OUTPUTS)


def generate(cluster, tmp_path: Path, site: str = "lab", **kwargs) -> tuple[dict, Path]:
    """Write outputs and attributes under ``tmp_path``; the attributes and their file."""
    outputs = write_outputs(tmp_path / "terraform")
    path = write_node_attributes(
        cluster, site, outputs, tmp_path / "chef", cookbook_files=tmp_path / "files", **kwargs
    )
    return json.loads(path.read_text()), path


def render(
    template: str, node_json: Path, variables: dict | None = None, tmp_path: Path | None = None
) -> str:
    ruby = require_tool("ruby")
    args = [ruby, str(HERE / "render_erb.rb"), str(COOKBOOK / "templates" / template), str(node_json)]
    if variables is not None:
        vars_file = (tmp_path or node_json.parent) / f"{template}.vars.json"
        vars_file.write_text(json.dumps(variables))
        args.append(str(vars_file))
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


__all__ = [
    "REGION_OUTPUTS",
    "set_path",
    "write_outputs",
    "outputs_copy",
    "generate",
    "render",
    "COOKBOOK",
    "HERE",
]
