"""A real bake's record: one file per region, the SSM parameter in each, the package lock beside them."""

from __future__ import annotations

import json

import pytest
from moto import mock_aws

from clusterspec.errors import UserError
from provision.packer import record

LOCK = "containerd.io 2.2.6-1~ubuntu.24.04~noble\nkubelet 1.35.8-1.1\nlibc6:amd64 2.39-0ubuntu8.6\n"


@mock_aws
def test_real_bake_writes_every_region_and_the_package_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    amis = {"us-east-2": "ami-0aaaaaaaaaaaaaaa1", "us-west-2": "ami-0aaaaaaaaaaaaaaa2"}
    packages = record.parse_package_lock(LOCK, "package-lock")
    done = record.record_bake(
        "dlr", "us-east-2", amis, "dlr-gpu-worker-x", tmp_path, source_ami="ami-0src", package_lock=packages
    )
    assert done["ssm_value"] == "ami-0aaaaaaaaaaaaaaa1" and done["regions"] == ["us-east-2", "us-west-2"]
    west = json.loads((tmp_path / "us-west-2.json").read_text())
    assert west["ami_id"] == "ami-0aaaaaaaaaaaaaaa2" and west["package_lock"] == "package-lock.json"
    assert "ec2_endpoint" not in west
    lock = record.load_package_lock(tmp_path)
    assert lock["source_ami"] == "ami-0src" and lock["amis"] == amis
    assert lock["packages"] == {
        "containerd.io": "2.2.6-1~ubuntu.24.04~noble",
        "kubelet": "1.35.8-1.1",
        "libc6": "2.39-0ubuntu8.6",
    }


def test_malformed_or_missing_lock_is_one_line(tmp_path):
    with pytest.raises(UserError) as err:
        record.parse_package_lock("kubelet\n", "lock")
    assert err.value.lines == ["lock:1: expected 'package version', got 'kubelet'"]
    with pytest.raises(UserError) as err:
        record.load_package_lock(tmp_path)
    assert err.value.lines == [
        f"{tmp_path}/package-lock.json: no package lock; bake the image first (`invoke bake-ami`)"
    ]
