"""The whole pipeline on loopback: spec -> variables -> real `packer build` against moto -> recorded AMIs."""

from __future__ import annotations

import json

import pytest

from clusterspec.loader import load_spec
from provision.packer import bake, moto_local
from tests.support import require_tool


@pytest.mark.tool
def test_local_bake_records_one_ami_per_region_apart_from_real_bakes(tmp_path, monkeypatch):
    require_tool("packer")
    # the local bake runs no script: it needs no lab registry (the embedded account's names the standard image)
    monkeypatch.delenv("LAB_REGISTRY", raising=False)
    cluster = load_spec()
    steps: list[str] = []
    done = bake.bake(
        cluster,
        "us-east-2",
        local=True,
        build_dir=tmp_path,
        on_event=lambda e: steps.append(e.message or ""),
    )
    # One bake, copied by Packer (ami_regions) to every other region of the spec.
    assert done["regions"] == sorted(cluster.spill_over_order)
    records = {r: json.loads((tmp_path / f"ami-local/{r}.json").read_text()) for r in done["regions"]}
    assert len({rec["ami_id"] for rec in records.values()}) == 3
    assert moto_local.SOURCE_AMI_ID not in {rec["ami_id"] for rec in records.values()}
    recorded = records["us-east-2"]
    assert recorded["ami_id"] == done["ssm_value"]
    assert {rec["bake_region"] for rec in records.values()} == {"us-east-2"}
    assert {rec["source_ami"] for rec in records.values()} == {moto_local.SOURCE_AMI_ID}
    assert recorded["name"].startswith("dlr-gpu-worker-ubuntu24.04-nvidia580.178.04p-cuda12.9-k8s1.35.8-")
    assert recorded["package_lock"] is None  # no script runs in the local bake
    # A moto AMI never lands where Terraform and Chef read real bakes.
    assert not (tmp_path / "ami").exists()
    assert done["ssm_parameter"] == "/dlr/ami/gpu-worker"
    assert any(f"Found Image ID: {moto_local.SOURCE_AMI_ID}" in s for s in steps)
    assert any("Copying to: us-west-2" in s for s in steps)
    variables = json.loads((tmp_path / "packer/us-east-2/variables.pkrvars.json").read_text())
    assert variables["ec2_endpoint"] == recorded["ec2_endpoint"]
    assert variables["ami_regions"] == ["us-west-2", "us-east-1"]
