"""Joins that cannot be lost (terraform/modules/node_join): the user data installs cluster-join.service, which
systemd restarts with back-off until the node is registered; each attempt resets a failed join, writes the
kubelet's reservations for the instance type as a kubeadm KubeletConfiguration patch, and skips once joined."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterspec import kubelet_reserved
from tests.provision.terraform.join_render import render_join
from tests.provision.terraform.test_provider_id import _run
from tests.provision.terraform.tf_files import MODULES
from tests.support import load_yaml, require_tool

IMDS = {"instance-id": "i-0123456789abcdef0", "placement/availability-zone": "us-west-2a",
        "placement/region": "us-west-2", "instance-type": "g4dn.xlarge"}  # fmt: skip
UNIT = MODULES / "node_join/templates/cluster-join.service"


@pytest.fixture(scope="module")
def user_data(tmp_path_factory):
    return render_join(tmp_path_factory.mktemp("join"), "research.cluster/node-group=dlr-us-west-2-gpu-t4",
                       "nvidia.com/gpu=present:NoSchedule", types=["g4dn.xlarge"])  # fmt: skip


def _unit() -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in UNIT.read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )


def test_the_unit_retries_for_ever_with_back_off():
    unit = _unit()
    assert unit["Restart"] == "on-failure" and unit["StartLimitIntervalSec"] == "0"
    assert (
        unit["RestartSec"] == "10s" and unit["RestartMaxDelaySec"] == "5min" and int(unit["RestartSteps"]) > 0
    )
    assert unit["ConditionPathExists"] == "!/etc/kubernetes/kubelet.conf"
    assert unit["Type"] == "oneshot" and unit["ExecStart"] == "/usr/local/sbin/cluster-join"


def test_systemd_accepts_the_unit(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        pytest.skip("systemd-analyze is not installed")
    (tmp_path / "cluster-join.service").write_text(
        UNIT.read_text().replace("/usr/local/sbin/cluster-join", "/bin/true")
    )
    done = subprocess.run(
        [analyze, "verify", str(tmp_path / "cluster-join.service")], capture_output=True, text=True
    )
    # RestartSteps/RestartMaxDelaySec are systemd 254+ (Ubuntu 24.04 has 255); an older analyzer only warns
    problems = [ln for ln in done.stderr.splitlines() if ln.strip() and "RestartSteps" not in ln
                and "RestartMaxDelaySec" not in ln and "cluster-join.service" in ln]  # fmt: skip
    assert problems == [], done.stderr


def test_a_failed_join_is_reset_and_the_next_start_joins(user_data, tmp_path):
    done, root, calls = _run(user_data, IMDS, tmp_path, {"FAKE_JOIN_FAILS": "1"})
    assert done.returncode == 1 and "resetting before the next attempt" in done.stderr
    assert [c for c in calls if c.startswith("kubeadm")][-1] == "kubeadm reset -f"
    assert "systemctl enable --now --no-block cluster-join.service" in calls  # cloud-init never waits on it
    # systemd's next start
    again = subprocess.run(["bash", str(root / "usr/local/sbin/cluster-join")], capture_output=True, text=True,
                           env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "FAKE_STATE": str(tmp_path / "state"),
                                "JOIN_ROOT": str(root), "FAKE_JOIN_FAILS": "1"})  # fmt: skip
    assert again.returncode == 0, again.stderr
    joins = [c for c in (tmp_path / "state/calls").read_text().splitlines() if c.startswith("kubeadm join")]
    assert len(joins) == 2 and all(f"--patches {root}/etc/kubernetes/patches" in j for j in joins)


def test_the_kubelet_gets_the_reservations_of_its_instance_type(user_data, tmp_path):
    done, root, _calls = _run(user_data, IMDS, tmp_path)
    assert done.returncode == 0, done.stderr
    patch = load_yaml(root / "etc/kubernetes/patches/kubeletconfiguration+merge.yaml")
    assert patch == kubelet_reserved.kubelet_config(4)
    assert patch["kubeReserved"] == {"cpu": "80m", "memory": "1465Mi", "ephemeral-storage": "1Gi"}


def test_an_instance_type_without_reservations_does_not_join(user_data, tmp_path):
    done, _root, calls = _run(user_data, IMDS | {"instance-type": "p4d.24xlarge"}, tmp_path)
    assert done.returncode == 1 and "no kubelet reservations for p4d.24xlarge" in done.stderr
    assert not [c for c in calls if c.startswith("kubeadm join")]


def test_the_kubelets_bootstrap_key_is_made_and_its_hash_published_before_the_join(user_data, tmp_path):
    """Node identity (issue 36): the key the kubelet will load (<cert-dir>/kubelet-client.key.tmp, kubelet 1.35
    bootstrap.go tmpPrivateKeyFile; keyutil parses an "EC PRIVATE KEY" PEM), its public key's SHA-256 (DER
    SubjectPublicKeyInfo, as the approver hashes a request's) put at node-keys/<aws:userid> before kubeadm join."""
    import hashlib

    from cryptography.hazmat.primitives import serialization

    done, root, calls = _run(user_data, IMDS, tmp_path)
    assert done.returncode == 0, done.stderr
    key_file = root / "var/lib/kubelet/pki/kubelet-client.key.tmp"
    pem = key_file.read_bytes()
    assert pem.startswith(b"-----BEGIN EC PRIVATE KEY-----") and key_file.stat().st_mode & 0o777 == 0o600
    spki = (
        serialization.load_pem_private_key(pem, None)
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    assert (tmp_path / "state/s3-put").read_text().strip() == hashlib.sha256(spki).hexdigest()
    put = next(i for i, c in enumerate(calls) if c.startswith("aws s3 cp"))
    assert calls[put].endswith(
        "- s3://dlr-etcd-backups-123456789012/node-keys/AROAEXAMPLENODEROLE01:i-0123456789abcdef0"
    )
    assert put < next(i for i, c in enumerate(calls) if c.startswith("kubeadm join"))
    # a retry after a reset publishes the key it uses (a reset empties /var/lib/kubelet; a kept key is reused)
    again = subprocess.run(["bash", str(root / "usr/local/sbin/cluster-join")], capture_output=True, text=True,
                           env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "FAKE_STATE": str(tmp_path / "state"),
                                "JOIN_ROOT": str(root)})  # fmt: skip
    assert again.returncode == 0 and key_file.read_bytes() == pem, again.stderr


KEYUTIL_MAIN = """package main

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"os"

	"k8s.io/client-go/util/keyutil"
)

func main() {
	data, generated, err := keyutil.LoadOrGenerateKeyFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	key, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	der, _ := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	fmt.Printf("%x %v\\n", sha256.Sum256(der), generated)
}
"""


def test_the_kubelet_loads_the_key_the_node_published(user_data, tmp_path):
    """The seam with the kubelet: its bootstrap (kubelet 1.35, bootstrap.go LoadClientCert) calls client-go
    v0.35's keyutil.LoadOrGenerateKeyFile on <cert-dir>/kubelet-client.key.tmp; the real function, built from
    the module cache, loads the node's key (does not make its own) and its public key has the published hash."""
    import os

    go = require_tool("go")
    done, root, _calls = _run(user_data, IMDS, tmp_path)
    assert done.returncode == 0, done.stderr
    src = tmp_path / "keyutil"
    src.mkdir()
    (src / "go.mod").write_text("module check\n\ngo 1.24\n\nrequire k8s.io/client-go v0.35.4\n")
    (src / "main.go").write_text(KEYUTIL_MAIN)
    env = {"PATH": f"{Path(go).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "GOPROXY": "off", "GOFLAGS": "-mod=mod",
           "GOSUMDB": "off", "GOTOOLCHAIN": "local",
           **{k: subprocess.run([go, "env", k], capture_output=True, text=True).stdout.strip()
              for k in ("GOPATH", "GOCACHE", "GOMODCACHE")}}  # fmt: skip
    tidy = subprocess.run([go, "mod", "tidy"], cwd=src, env=env, capture_output=True, text=True, timeout=300)
    if tidy.returncode:
        pytest.skip(f"k8s.io/client-go v0.35.4 is not in the module cache: {tidy.stderr.strip()[-200:]}")
    key = root / "var/lib/kubelet/pki/kubelet-client.key.tmp"
    before = key.read_bytes()
    got = subprocess.run(
        [go, "run", ".", str(key)], cwd=src, env=env, capture_output=True, text=True, timeout=600
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == [(tmp_path / "state/s3-put").read_text().strip(), "false"]
    assert key.read_bytes() == before and os.path.exists(key)


def test_a_joined_node_is_left_alone(user_data, tmp_path):
    root = tmp_path / "root"
    (root / "etc/kubernetes").mkdir(parents=True)
    (root / "etc/kubernetes/kubelet.conf").write_text("apiVersion: v1\n")
    done, _root, calls = _run(user_data, IMDS, tmp_path)
    assert done.returncode == 0 and "already joined" in done.stderr
    assert not [c for c in calls if c.startswith(("kubeadm", "curl", "aws"))]


def test_the_user_data_is_shellcheck_clean(user_data, tmp_path):
    from tests.support import ROOT, require_tool

    shellcheck = require_tool("shellcheck", str(ROOT / ".venv/bin/shellcheck"))
    (tmp_path / "user-data.sh").write_text(user_data)
    done = subprocess.run(
        [shellcheck, "-S", "warning", str(tmp_path / "user-data.sh")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    "vcpus,cpu_m",
    # nodeadm's getCPUMillicoresToReserve: 6% + 1% + 2 x 0.5% + 0.25% per further core
    [(1, 60), (2, 70), (4, 80), (8, 90), (48, 190), (96, 310)],
)
def test_the_cpu_reservation_is_amazon_eks_amis(vcpus, cpu_m):
    assert kubelet_reserved.cpu_millicores_to_reserve(vcpus) == cpu_m
    assert kubelet_reserved.memory_mebibytes_to_reserve(110) == 11 * 110 + 255


def test_member_0_is_the_only_target_terraform_attaches():
    from tests.provision.terraform.tf_files import resources

    ((_, attachment),) = resources(MODULES / "control_plane", "aws_lb_target_group_attachment")
    assert "count" not in attachment and "for_each" not in attachment
    assert attachment["target_id"] == "${aws_instance.member[0].private_ip}"
    text = (MODULES / "control_plane/scripts/bootstrap.sh").read_text()
    join = text[text.index("join_cluster() {") :]
    assert join.index("register_target") < join.index('report ready "joined the control plane')


def test_hosts_probe_the_path_mtu_between_regions(user_data, tmp_path):
    """Inter-Region VPC peering carries at most 8500 bytes (EC2 User Guide, network MTU) while the VPC runs 9001:
    every cloud host turns on TCP path MTU probing before it joins; pod traffic fits as it is."""
    from clusterspec.loader import load_spec
    from provision import mtu

    _done, root, calls = _run(user_data, IMDS, tmp_path)
    assert (root / "etc/sysctl.d/90-cluster-pmtu.conf").read_text().strip() == "net.ipv4.tcp_mtu_probing = 1"
    assert calls.index(f"sysctl -p {root}/etc/sysctl.d/90-cluster-pmtu.conf") < calls.index(
        "systemctl enable --now --no-block cluster-join.service"
    )
    assert "net.ipv4.tcp_mtu_probing = 1" in (MODULES / "control_plane/scripts/bootstrap.sh").read_text()
    assert mtu.pod_mtu(load_spec().vpn.tunnel) + 50 <= 8500  # VXLAN between regions fits the peering MTU
