"""Every kubeadm configuration the project renders passes `kubeadm config validate` of the release it deploys
(issue 33): the control plane's InitConfiguration and ClusterConfiguration and its members' JoinConfiguration
(terraform/modules/control_plane/scripts/bootstrap.sh, run by bash as the user data runs it), the lab servers'
JoinConfiguration (the Chef template), the cloud workers' kubelet reservations (node_join's patches, as the
KubeletConfiguration kubeadm merges them into) and the local control plane's own."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from clusterspec import kubelet_reserved
from clusterspec.loader import load_spec
from localcluster import binaries, kubeadm
from tests.support import require_tool

pytestmark = pytest.mark.tool


@pytest.fixture(scope="module")
def kubeadm_bin() -> str:
    return require_tool("kubeadm", str(binaries.BIN / "kubeadm"))


def _validate(kubeadm_bin: str, docs: list[dict], tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return subprocess.run([kubeadm_bin, "config", "validate", "--config", str(path)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def _production(tmp_path, issuer: str = "") -> list[dict]:
    cluster = load_spec()
    values = kubeadm.production_values(cluster, "api.research.internal:6443", "api.research.internal",
                                       "dlr-api-0123.elb.us-west-2.amazonaws.com", issuer)  # fmt: skip
    return kubeadm.render_production(tmp_path / "root", values)


@pytest.mark.parametrize("issuer", ["", "https://dlr-oidc.s3.us-west-2.amazonaws.com"])
def test_the_control_planes_init_configuration_is_valid(kubeadm_bin, tmp_path, issuer) -> None:
    docs = _production(tmp_path, issuer)
    assert [d["kind"] for d in docs] == ["InitConfiguration", "ClusterConfiguration"]
    done = _validate(kubeadm_bin, docs, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout


def test_a_broken_configuration_is_refused_with_kubeadms_message(kubeadm_bin, tmp_path) -> None:
    """The check can fail: a scheduler extraArgs entry without a value, as a typo in the renderer would give."""
    docs = _production(tmp_path)
    docs[1]["scheduler"]["extraArgs"] = [{"name": "config"}]
    docs[1]["networking"]["podSubnet"] = "10.128.0.0/33"
    done = _validate(kubeadm_bin, docs, tmp_path)
    assert done.returncode != 0
    assert "podSubnet" in done.stderr or "invalid" in done.stderr.lower()


def test_a_joining_members_configuration_is_valid(kubeadm_bin, tmp_path) -> None:
    env = {"PATH": os.environ["PATH"], "CP_ROOT": str(tmp_path), "MEMBER": "1",
           "ENDPOINT": "api.research.internal:6443"}  # fmt: skip
    script = f'set -euo pipefail; source "{kubeadm.BOOTSTRAP}"; write_join_config abcdef.0123456789abcdef ' \
             f'sha256:{"0" * 64} {"1" * 64}'  # fmt: skip
    subprocess.run(["bash", "-c", script], env=env, check=True, timeout=30)
    docs = list(yaml.safe_load_all((tmp_path / "etc/kubernetes/bootstrap/join.yaml").read_text()))
    assert docs[0]["kind"] == "JoinConfiguration" and docs[0]["controlPlane"]["certificateKey"]
    done = _validate(kubeadm_bin, docs, tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_lab_servers_join_configuration_is_valid(kubeadm_bin, tmp_path) -> None:
    require_tool("ruby")
    from tests.provision.chef.support import generate, render
    from tests.provision.chef.test_attributes import _cluster

    cluster = _cluster({"sites.0.servers.2.taints": [
        {"key": "research.cluster/owner", "value": "vision", "effect": "NoSchedule"}]})  # fmt: skip
    attrs, node_json = generate(cluster, tmp_path)
    server = attrs["cluster_node"]["servers"]["titan-01"]
    variables = {"node_name": "titan-01", "server": server, "token": "abcdef.0123456789abcdef",
                 "ca_cert_hash": f"sha256:{'0' * 64}"}  # fmt: skip
    docs = [yaml.safe_load(render("kubeadm-join.yaml.erb", node_json, variables, tmp_path))]
    done = _validate(kubeadm_bin, docs, tmp_path)
    assert done.returncode == 0, done.stderr


def test_every_cloud_workers_kubelet_reservation_is_a_valid_kubelet_configuration(kubeadm_bin, tmp_path) -> None:
    """node_join writes one merge patch per instance type; kubeadm merges it into the KubeletConfiguration."""
    cluster = load_spec()
    types = sorted({t for r in cluster.regions for g in r.node_groups for t in g.instance_types})
    assert types
    init = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration"}
    for instance_type, patch in kubelet_reserved.for_instance_types(types).items():
        doc = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **patch}
        done = _validate(kubeadm_bin, [init, doc], tmp_path)
        assert done.returncode == 0, f"{instance_type}: {done.stderr}"


def test_the_local_control_planes_configuration_is_productions_with_local_values(kubeadm_bin, tmp_path) -> None:
    ports = kubeadm.Ports(16443, 12379, 12380, 12381, 10257, 10259)
    path = kubeadm.local_config(tmp_path, ports)
    docs = list(yaml.safe_load_all(path.read_text()))
    cluster_config = docs[1]
    assert cluster_config["controlPlaneEndpoint"] == "127.0.0.1:16443"
    assert cluster_config["scheduler"] == _production(tmp_path / "prod")[1]["scheduler"]
    done = _validate(kubeadm_bin, docs, tmp_path)
    assert done.returncode == 0, done.stderr
