from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec, spec_from_data
from provision.packer.images import source_ami_name
from provision.packer.variables import ami_name, packer_variables
from tests.support import ROOT, example_spec_data, load_yaml, set_path

CASES = load_yaml(ROOT / "tests/provision/packer/driver_cases.yaml")


def _cluster(changes: dict):
    data = example_spec_data()
    for path, value in changes.items():
        set_path(data, path, value)
    return spec_from_data(data, "cluster.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_driver_follows_the_cloud_gpu_models(case):
    values = packer_variables(_cluster(case["set"]), "us-west-2")
    assert values["nvidia_driver_flavour"] == case["flavour"]
    assert values["nvidia_driver_package"] == case["package"]


def test_versions_are_the_specs():
    cluster = load_spec()
    values = packer_variables(cluster, "us-east-1", ec2_endpoint="http://127.0.0.1:1")
    sw = cluster.software
    assert values["region"] == "us-east-1"
    assert values["ec2_endpoint"] == "http://127.0.0.1:1"
    assert values["cuda_version"] == sw.cuda
    assert values["containerd_version"] == sw.containerd
    assert values["nvidia_container_toolkit_version"] == sw.nvidia_container_toolkit
    assert values["kubernetes_version"] == cluster.kubernetes.version
    assert values["kubernetes_minor"] == cluster.kubernetes.minor
    assert values["source_ami_name"] == source_ami_name(sw.ubuntu)


@pytest.mark.parametrize(
    ("ubuntu", "pattern"),
    [
        ("22.04", "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*"),
        ("24.04", "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"),
    ],
)
def test_source_ami_follows_the_ubuntu_release(ubuntu, pattern):
    assert packer_variables(_cluster({"software.ubuntu": ubuntu}), "us-west-2")["source_ami_name"] == pattern


def test_ami_name_carries_the_versions_and_fits_aws_limits():
    name = ami_name(load_spec(), datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert name == "dlr-gpu-worker-ubuntu24.04-nvidia580.178.04p-cuda12.9-k8s1.35.8-20260102-030405"
    assert 3 <= len(name) <= 128


def test_unknown_region_is_one_line():
    with pytest.raises(UserError) as err:
        packer_variables(load_spec(), "eu-west-1")
    assert err.value.lines == [
        "--region: region 'eu-west-1' is not in the spec (regions: us-west-2, us-east-1, us-east-2)"
    ]
