"""The whole pipeline on loopback: spec -> variables -> real `packer build` against moto -> recorded AMI."""

from __future__ import annotations

import json

import pytest

from provision.loader import load_spec
from provision.packer import bake, moto_local
from tests.support import require_tool


@pytest.mark.tool
def test_local_bake_records_the_ami(tmp_path):
    require_tool("packer")
    cluster = load_spec()
    steps: list[str] = []
    done = bake.bake(
        cluster,
        "us-east-2",
        local=True,
        build_dir=tmp_path,
        on_event=lambda e: steps.append(e.message or ""),
    )
    recorded = json.loads((tmp_path / "ami/us-east-2.json").read_text())
    assert recorded["ami_id"] == done["ssm_value"] != moto_local.SOURCE_AMI_ID
    assert recorded["ami_id"].startswith("ami-")
    assert recorded["region"] == "us-east-2"
    assert recorded["name"].startswith("dlr-gpu-worker-ubuntu22.04-nvidia570p-cuda12.8-k8s1.31.4-")
    assert done["ssm_parameter"] == "/dlr/ami/gpu-worker"
    assert any(f"Found Image ID: {moto_local.SOURCE_AMI_ID}" in s for s in steps)
    variables = json.loads((tmp_path / "packer/us-east-2/variables.pkrvars.json").read_text())
    assert variables["ec2_endpoint"] == recorded["ec2_endpoint"]
