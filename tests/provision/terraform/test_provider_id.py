"""The seam between a cloud node's join and the autoscaler: the join user data Terraform renders, run with bash
against fakes (IMDSv2 answering as the moto instance does), gives the kubelet exactly the providerID the
autoscaler's AWS adapter and snapshot parser map back to that instance and its Auto Scaling group; the zone,
region and instance-type labels are ones the NodeRestriction admission lets a kubelet set on its own Node
(k8s.io/kubelet/pkg/apis well_known_labels.go: kubeletLabels, kubeletLabelNamespaces)."""

from __future__ import annotations

import re
import shlex
import subprocess

import boto3
import pytest
from moto import mock_aws

from autoscaler.adapters.aws import AwsCloud
from autoscaler.controller import _instance_id
from autoscaler.core.snapshot import parse_snapshot
from clusterspec.loader import load_spec
from clusterspec.names import INSTANCE_TYPE_KEY, NODE_GROUP_LABEL, PROVIDER_ID_FORMAT, REGION_KEY, ZONE_KEY
from tests.autoscaler.aws_setup import create_groups
from tests.provision.terraform.join_render import render_join
from tests.provision.terraform.tf_files import MODULES, module_calls
from tests.support import ROOT

FAKE = ROOT / "tests/provision/terraform/fakes/join_fake.sh"
COMMANDS = ["curl", "aws", "kubeadm", "sleep", "systemctl", "sysctl", "iptables"]
# NodeRestriction: the labels a kubelet may set itself (kubeletLabels) and the namespaces (kubeletLabelNamespaces)
KUBELET_LABELS = {"kubernetes.io/hostname", ZONE_KEY, REGION_KEY, INSTANCE_TYPE_KEY, "kubernetes.io/os",
                  "kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone",
                  "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/instance-type"}  # fmt: skip


def _kubelet_may_set(key: str) -> bool:
    domain = key.split("/", 1)[0] if "/" in key else ""
    k8s = any(domain == d or domain.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))
    own = any(
        domain == d or domain.endswith("." + d) for d in ("kubelet.kubernetes.io", "node.kubernetes.io")
    )
    return key in KUBELET_LABELS or not k8s or own


def _run(script: str, imds: dict[str, str], tmp_path, env: dict | None = None):
    """The user data (which installs the unit), then one start of cluster-join as systemd would run it."""
    fakes, state, root = tmp_path / "bin", tmp_path / "state", tmp_path / "root"
    fakes.mkdir()
    for name in COMMANDS:
        (fakes / name).symlink_to(FAKE)
    (state / "imds").mkdir(parents=True, exist_ok=True)
    for path, value in imds.items():
        (state / "imds" / path).parent.mkdir(parents=True, exist_ok=True)
        (state / "imds" / path).write_text(value)
    (state / "calls").touch()
    (tmp_path / "user-data.sh").write_text(script)
    environ = {
        "PATH": f"{fakes}:/usr/bin:/bin",
        "FAKE_STATE": str(state),
        "JOIN_ROOT": str(root),
        **(env or {}),
    }
    done = subprocess.run(["bash", str(tmp_path / "user-data.sh")], env=environ, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = subprocess.run(["bash", str(root / "usr/local/sbin/cluster-join")], env=environ, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done, root, (state / "calls").read_text().splitlines()


def _kubelet_args(root) -> dict[str, str]:
    text = (root / "etc/default/kubelet").read_text()
    (line,) = re.findall(r'^KUBELET_EXTRA_ARGS="(.*)"$', text, re.M)
    return dict(a[2:].split("=", 1) for a in shlex.split(line))


@pytest.fixture(scope="module")
def spec():
    return load_spec()


@pytest.fixture
def aws_env(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-west-2"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)


def test_a_worker_registers_with_the_provider_id_the_autoscaler_maps_to_its_instance(spec, tmp_path, aws_env):
    region = spec.primary_region
    group = next(g for g in spec.region(region).node_groups if g.min > 0)
    asg = spec.asg_name(region, group)
    with mock_aws():
        create_groups(spec, regions=[region])
        (described,) = boto3.client("autoscaling", region_name=region).describe_auto_scaling_groups(
            AutoScalingGroupNames=[asg]
        )["AutoScalingGroups"]
        instance = described["Instances"][0]
        labels = ",".join(
            [f"{NODE_GROUP_LABEL}={asg}", *(f"{k}={v}" for k, v in sorted(group.labels.items()))]
        )
        script = render_join(tmp_path, labels, types=[instance["InstanceType"]])
        imds = {
            "instance-id": instance["InstanceId"],
            "placement/availability-zone": instance["AvailabilityZone"],
            "placement/region": region,
            "instance-type": instance["InstanceType"],
        }
        done, root, calls = _run(script, imds, tmp_path, {"FAKE_IMDS_FAILS": "2"})
        assert done.returncode == 0, done.stderr
        args = _kubelet_args(root)
        provider_id = args["provider-id"]
        assert provider_id == PROVIDER_ID_FORMAT.format(
            zone=instance["AvailabilityZone"], instance_id=instance["InstanceId"]
        )
        node_labels = dict(kv.split("=", 1) for kv in args["node-labels"].split(","))
        assert node_labels[ZONE_KEY] == instance["AvailabilityZone"] and node_labels[REGION_KEY] == region
        assert node_labels[INSTANCE_TYPE_KEY] == instance["InstanceType"]
        assert all(_kubelet_may_set(k) for k in node_labels), node_labels
        assert any(
            c.startswith("kubeadm join 'api.research.internal:6443'") or "kubeadm join" in c for c in calls
        )

        # the autoscaler's view: the adapter's groups, and the Node the kubelet registers
        groups = AwsCloud(spec.name, [region], max_attempts=1, session=boto3.Session()).list_groups()
        node = {
            "metadata": {"name": "ip-10-0-1-5.us-west-2.compute.internal", "labels": node_labels,
                         "creationTimestamp": "2026-12-01T00:00:00Z"},
            "spec": {"providerID": provider_id},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-12-01T00:01:00Z"}]},
        }  # fmt: skip
    snapshot = parse_snapshot({"now": "2026-12-01T00:10:00Z", "regions": [region], "groups": groups,
                               "nodes": [node], "pods": []})  # fmt: skip
    (parsed,) = snapshot.nodes
    assert parsed.instance_id == instance["InstanceId"] == _instance_id(node)
    assert parsed.group == asg and parsed.zone == instance["AvailabilityZone"]


def test_the_pod_gateway_and_the_node_groups_join_through_the_same_module():
    gateway = module_calls(MODULES / "pod_gateway")["join"]
    assert gateway["source"] == "../node_join"
    assert gateway["node_labels"] == "research.cluster/role=pod-gateway"
    assert gateway["taints"] == "research.cluster/pod-gateway=true:NoSchedule"
    assert module_calls(MODULES / "node_group")["join"]["source"] == "../node_join"


def test_without_an_identity_the_join_stops_before_kubeadm(tmp_path):
    script = render_join(tmp_path, "research.cluster/node-group=dlr-us-west-2-cpu")
    done, _root, calls = _run(script, {}, tmp_path)
    assert done.returncode != 0 and "cannot read this instance's identity from IMDS" in done.stderr
    assert not any(c.startswith("kubeadm join") for c in calls)
