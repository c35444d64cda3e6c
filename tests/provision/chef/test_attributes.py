from __future__ import annotations

import pytest

from clusterspec.errors import SpecError, UserError
from clusterspec.loader import load_spec, spec_from_data
from provision.chef.image_scripts import COMMON
from provision.packer import template
from tests.provision.chef.support import REGION_OUTPUTS, generate, lock_text, write_lock
from tests.support import example_spec_data, set_path


def _cluster(changes: dict):
    data = example_spec_data()
    for path, value in changes.items():
        set_path(data, path, value)
    return spec_from_data(data, "cluster.yaml")


def test_tunnels_come_from_the_terraform_outputs(tmp_path):
    attrs, _ = generate(load_spec(), tmp_path)
    vpn = attrs["cluster_node"]["vpn"]
    expected = [t for doc in REGION_OUTPUTS.values() for t in doc["site_vpn_tunnels"]["value"]["lab"]]
    assert [(t["outside_ip"], t["inside_cidr"], t["psk_parameter"]) for t in vpn["tunnels"]] == [
        (t["outside_ip"], t["inside_cidr"], t["psk_parameter"]) for t in expected
    ]
    assert [t["region"] for t in vpn["tunnels"]] == ["us-west-2"] * 2 + ["us-east-1"] * 2 + ["us-east-2"] * 2
    assert vpn["gateway"] == "gw-01" and vpn["public_ip"] == "198.51.100.10"
    assert attrs["cluster_node"]["kubernetes"]["api_endpoint"] == "api.research.internal:6443"


def test_no_secret_in_the_attributes(tmp_path):
    _, path = generate(load_spec(), tmp_path)
    text = path.read_text().lower()
    assert "secret" not in text and 'token":' not in text
    attrs = generate(load_spec(), tmp_path)[0]["cluster_node"]
    assert {t["psk_parameter"].rsplit("/", 3)[0] for t in attrs["vpn"]["tunnels"]} == {"/dlr/vpn/psk"}
    assert attrs["kubernetes"]["join_token_parameter"] == "/dlr/kubeadm/join-token"


def test_titan_x_site_gets_proprietary_modules_even_when_the_cloud_gets_open(tmp_path):
    cluster = _cluster({"regions.0.node_groups.2": "__delete__"})  # no V100 left: the image uses open modules
    attrs = generate(cluster, tmp_path)[0]["cluster_node"]
    assert attrs["software"]["nvidia_driver"] == {
        "branch": 580,
        "version": "580.178.04",
        "flavour": "proprietary",
        "package": "nvidia-driver-580-server",
    }
    assert attrs["image_scripts"]["environment"]["NVIDIA_DRIVER_PACKAGE"] == "nvidia-driver-580-server"


@pytest.mark.parametrize(
    ("changes", "expect"),
    [
        (
            {"software.nvidia_driver.branch": 590, "software.nvidia_driver.version": "590.44.01"},
            "driver branch 590 does not support titan-x-maxwell",
        ),
        ({"software.nvidia_driver.flavour": "open"}, "open kernel modules do not support"),
        ({"software.cuda": "13.0", "software.nvidia_driver.branch": 580}, "CUDA 13.0 does not support"),
    ],
)
def test_impossible_driver_for_titan_x_is_rejected_at_validation(changes, expect):
    with pytest.raises(SpecError) as err:
        _cluster(changes)
    assert any(expect in line for line in err.value.lines), err.value.lines


def test_server_labels_and_roles(tmp_path):
    servers = generate(load_spec(), tmp_path)[0]["cluster_node"]["servers"]
    titan = servers["titan-04"]
    assert titan["labels"] == {
        "research.cluster/gpu-architecture": "maxwell",
        "research.cluster/gpu-model": "titan-x",  # the spec's own label wins over the catalog name
        "research.cluster/pool": "gpu",
        "research.cluster/site": "lab",
    }
    assert servers["gw-01"]["roles"] == ["gateway"] and servers["gw-01"]["labels"] == {
        "research.cluster/role": "pod-gateway",  # joins as the cloud's pod gateways do (test_pod_routing.py)
        "research.cluster/site": "lab",
    }


KUBERNETES_MEMBER = {"apt-repositories.sh", "containerd.sh", "kubernetes.sh", "flannel-prereqs.sh"}


def test_scripts_are_the_image_scripts(tmp_path):
    attrs = generate(load_spec(), tmp_path)[0]["cluster_node"]["image_scripts"]
    assert attrs["order"] == template.provisioner_scripts()
    assert attrs["common"] == [s for s in attrs["order"] if s in COMMON]
    # the gateway joins (pod routes): runtime, kubelet and flannel's prerequisites, in the image's order, no GPU
    assert attrs["node"] == [s for s in attrs["order"] if s in COMMON or s in KUBERNETES_MEMBER]
    assert not any("nvidia" in s or "cuda" in s for s in attrs["node"])
    for name in attrs["order"]:
        copied = (tmp_path / "files" / name).read_bytes()
        assert copied == (template.TEMPLATE_DIR / "scripts" / name).read_bytes()


def test_a_script_change_changes_its_digest(tmp_path):
    before = generate(load_spec(), tmp_path / "a")[0]["cluster_node"]["image_scripts"]["digests"]
    write_lock(tmp_path / "b" / "ami", lock_text({"1.35.8-": "1.35.9-"}))
    after = generate(
        _cluster({"kubernetes.version": "1.35.9"}), tmp_path / "b", ami_dir=tmp_path / "b" / "ami"
    )[0]
    assert after["cluster_node"]["image_scripts"]["digests"] != before


def test_unknown_site_is_one_line(tmp_path):
    with pytest.raises(UserError) as err:
        generate(load_spec(), tmp_path, site="attic")
    assert err.value.lines == ["--site: site 'attic' is not in the spec (sites: lab)"]
