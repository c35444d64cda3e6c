"""Helpers of the Chef tests: Terraform outputs on disk, attributes, templates rendered with Ruby's ERB."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

from provision.chef.attributes import write_node_attributes
from provision.packer import record
from tests.support import ROOT, load_yaml, require_tool, set_path

HERE = ROOT / "tests/provision/chef"
COOKBOOK = ROOT / "chef/cookbooks/cluster_node"
OUTPUTS = load_yaml(HERE / "terraform_outputs.yaml")
# the regions' outputs only (the file also holds the global root's)
REGION_OUTPUTS = {k: v for k, v in OUTPUTS.items() if k != "global"}


def write_outputs(directory: Path, documents: dict | None = None) -> Path:
    for region, doc in (documents or OUTPUTS).items():
        (directory / region).mkdir(parents=True, exist_ok=True)
        (directory / region / "outputs.json").write_text(json.dumps(doc))
    return directory


def outputs_copy() -> dict:
    return copy.deepcopy(OUTPUTS)


IMAGE_LOCK = HERE / "package_lock.txt"  # dpkg-query -W of an image baked from the example spec


def write_lock(ami_dir: Path, text: str | None = None) -> Path:
    """``build/ami/package-lock.json`` as a real bake of the example spec writes it (record.record_bake)."""
    ami_dir.mkdir(parents=True, exist_ok=True)
    packages = record.parse_package_lock(
        text if text is not None else IMAGE_LOCK.read_text(), "package_lock.txt"
    )
    lock = {
        "ami_name": "dlr-gpu-worker-ubuntu24.04-nvidia580.178.04p-cuda12.9-k8s1.35.8-20261130-090000",
        "amis": {"us-west-2": "ami-0123456789abcdef0"},
        "bake_region": "us-west-2",
        "source_ami": "ami-0fedcba9876543210",
        "packages": packages,
    }
    path = ami_dir / record.LOCK_FILE
    path.write_text(json.dumps(lock))
    return path


def lock_text(replace: dict[str, str]) -> str:
    """The example image's lock with versions replaced (``{"1.35.8-": "1.35.9-"}``): a bake of a changed spec."""
    text = IMAGE_LOCK.read_text()
    for old, new in replace.items():
        text = text.replace(old, new)
    return text


def generate(cluster, tmp_path: Path, site: str = "lab", **kwargs) -> tuple[dict, Path]:
    """Write outputs, the image's package lock and attributes under ``tmp_path``; the attributes and their file."""
    outputs = write_outputs(tmp_path / "terraform")
    if "ami_dir" not in kwargs:
        write_lock(tmp_path / "ami")
        kwargs["ami_dir"] = tmp_path / "ami"
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
