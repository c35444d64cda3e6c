"""Cloud and lab nodes run the same GPU stack: the image's package lock (recorded by the bake) is what the cookbook
pins, package for package, and a lock that disagrees with the spec is refused."""

from __future__ import annotations

import pytest

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from provision.chef.attributes import STACK_PACKAGES
from provision.packer import record
from tests.provision.chef.support import IMAGE_LOCK, generate, lock_text, render, write_lock
from tests.support import ROOT

SCRIPTS = ROOT / "packer" / "scripts"


def _pins(preferences: str) -> dict[str, str]:
    """apt preferences stanzas (Package / Pin: version / Pin-Priority) as package -> version."""
    pins: dict[str, str] = {}
    for stanza in preferences.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith("#")
        )
        if "Package" in fields:
            assert fields["Pin-Priority"] == "1001", (
                stanza
            )  # > 1000: even a downgrade goes to the image's version
            pins[fields["Package"]] = fields["Pin"].removeprefix("version ")
    return pins


def test_the_lab_pins_exactly_the_images_stack(tmp_path):
    attrs, node_json = generate(load_spec(), tmp_path)
    lock = attrs["cluster_node"]["package_lock"]
    image = record.parse_package_lock(IMAGE_LOCK.read_text(), "image")
    image_stack = {n: v for n, v in image.items() if STACK_PACKAGES.match(n)}
    pinned = _pins(render("package-lock-preferences.erb", node_json, {"lock": lock}, tmp_path))
    listed = dict(
        line.split()
        for line in render("package-lock.erb", node_json, {"lock": lock}, tmp_path).splitlines()
        if line and not line.startswith("#")
    )
    assert pinned == listed == image_stack
    # the components the issue names, at the spec's versions on both sides
    for name, version in {
        "nvidia-utils-580-server": "580.178.04-",
        "nvidia-dkms-580-server": "580.178.04-",
        "cuda-toolkit-12-9": "12.9.",
        "containerd.io": "2.2.6-",
        "nvidia-container-toolkit": "1.17.8-",
        "kubelet": "1.35.8-",
        "kubeadm": "1.35.8-",
    }.items():
        assert image[name].startswith(version) and pinned[name] == image[name], name
    # the rest of the image (kernel, libc, sshd) is the lab's own: not pinned
    assert not {"libc6", "linux-aws", "openssh-server", "efa"} & set(pinned)


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (
            {"kubelet 1.35.8-1.1": "kubelet 1.35.7-1.1"},
            "kubelet is 1.35.7-1.1, not cluster.yaml's kubernetes.version 1.35.8",
        ),
        (
            {"580.178.04-0ubuntu0.24.04.1": "580.159.03-0ubuntu0.24.04.1"},
            "nvidia-utils-580-server is 580.159.03",
        ),
        ({"cuda-toolkit-12-9 12.9.1-1\n": ""}, "no cuda-toolkit-12-9 (cluster.yaml software.cuda)"),
    ],
)
def test_a_lock_from_another_spec_is_refused_in_one_line(tmp_path, replace, message):
    path = write_lock(tmp_path / "ami", lock_text(replace))
    with pytest.raises(UserError) as err:
        generate(load_spec(), tmp_path, ami_dir=tmp_path / "ami")
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(f"{path}: ")
    assert message in err.value.lines[0]


def test_no_lock_means_bake_first_except_for_a_placeholder_dry_run(tmp_path):
    with pytest.raises(UserError) as err:
        generate(load_spec(), tmp_path, ami_dir=tmp_path / "none")
    assert err.value.lines == [
        f"{tmp_path}/none/package-lock.json: no package lock; bake the image first (`invoke bake-ami`)"
    ]
    attrs = generate(load_spec(), tmp_path, ami_dir=tmp_path / "none", placeholders=True)[0]
    assert attrs["cluster_node"]["package_lock"] is None


@pytest.mark.parametrize(
    "script", ["nvidia-driver.sh", "fabric-manager.sh", "containerd.sh", "kubernetes.sh"]
)
def test_every_pinning_script_prefers_the_lock(script):
    text = (SCRIPTS / script).read_text()
    assert 'lock="${PACKAGE_LOCK:-/etc/cluster/package-lock}"' in text
    assert "$(locked " in text
