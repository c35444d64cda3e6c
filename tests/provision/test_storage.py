"""Storage manifests: valid for Kubernetes (kubernetes-validate --strict), every claim add-user creates meets
the volume reserved for it, and the mount target lookup against moto."""

from __future__ import annotations

import boto3
import pytest
from kubernetes_validate import validate
from kubernetes_validate.utils import latest_version
from moto import mock_aws

from provision import storage
from provision.errors import UserError
from provision.loader import load_spec
from provision.users import namespace_objects

SPEC = load_spec()
EFS = "fs-0123456789abcdef0"


def test_every_manifest_passes_kubernetes_validate_strict() -> None:
    manifests = storage.render_storage(SPEC, EFS, "10.0.32.10")
    docs = [d for ds in manifests.values() for d in ds]
    assert {d["kind"] for d in docs} == {"CSIDriver", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                         "DaemonSet", "PersistentVolume"}  # fmt: skip
    for doc in docs:
        validate(doc, latest_version(), strict=True)


def test_each_claim_meets_its_reserved_volume() -> None:
    pvs = {v["metadata"]["name"]: v for v in storage.render_storage(SPEC, EFS, "10.0.32.10")["volumes.yaml"]}
    for user in SPEC.users:
        claims = [o for o in namespace_objects(SPEC, user.name) if o["kind"] == "PersistentVolumeClaim"]
        assert [c["metadata"]["name"] for c in claims] == ["home", "datasets", "results"]
        for claim in claims:
            pv = pvs[claim["spec"]["volumeName"]]
            assert pv["spec"]["claimRef"] == {
                "namespace": claim["metadata"]["namespace"],
                "name": claim["metadata"]["name"],
            }
            assert pv["spec"]["accessModes"] == claim["spec"]["accessModes"]
            assert pv["spec"]["storageClassName"] == claim["spec"]["storageClassName"] == ""
            assert pv["spec"]["csi"]["volumeAttributes"] == {"mounttargetip": "10.0.32.10"}
    assert pvs["u-alice-home"]["spec"]["csi"]["volumeHandle"] == f"{EFS}:/home/alice"
    assert pvs["u-alice-datasets"]["spec"]["csi"]["readOnly"] is True


def test_lab_volumes_point_at_the_nas() -> None:
    lab = storage.render_storage(SPEC, EFS, "10.0.32.10")["lab-volumes.yaml"]
    assert {v["metadata"]["name"]: v["spec"]["nfs"] for v in lab} == {
        "lab-home": {"server": "10.16.0.5", "path": "/export/home"},
        "lab-datasets": {"server": "10.16.0.5", "path": "/export/datasets"},
        "lab-results": {"server": "10.16.0.5", "path": "/export/results"},
    }


@pytest.mark.parametrize(
    "efs,ip,reason",
    [
        (
            "fs-nothex",
            "10.0.0.1",
            "--efs-id 'fs-nothex': expected a file system id like fs-0123456789abcdef0",
        ),
        (
            EFS,
            "10.0.0",
            "--mount-target-ip '10.0.0': expected the IPv4 address of a mount target in the primary region",
        ),
    ],
)
def test_bad_ids_are_one_line(efs, ip, reason) -> None:
    with pytest.raises(UserError) as e:
        storage.render_storage(SPEC, efs, ip)
    assert e.value.lines[0].startswith(reason)


def test_mount_target_lookup_picks_the_first_zone(monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-west-2")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        efs = boto3.client("efs", region_name="us-west-2")
        fs = efs.create_file_system(CreationToken="t")["FileSystemId"]
        for zone, cidr in (("us-west-2b", "10.0.2.0/24"), ("us-west-2a", "10.0.1.0/24")):
            subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
            efs.create_mount_target(FileSystemId=fs, SubnetId=subnet)
        ip = storage.mount_target_ip(fs, "us-west-2")
        assert ip.startswith("10.0.1.")
        assert storage.mount_target_ip(fs, "us-west-2", "us-west-2b").startswith("10.0.2.")
        with pytest.raises(UserError, match="no available mount target in us-west-2c"):
            storage.mount_target_ip(fs, "us-west-2", "us-west-2c")
