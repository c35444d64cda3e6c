"""GPU add-ons: strict validation, and node selection held to the scheduler's rules.

Which nodes a DaemonSet runs on is decided as the DaemonSet controller does (kubernetes pkg/controller/daemon:
NodeShouldRunDaemonPod -> the NodeAffinity and TaintToleration filters on the pod template). The tests evaluate the
rendered templates with the autoscaler's implementation of those filters (autoscaler.core.fit.static_reason:
nodeSelectorTerms are ORed, expressions ANDed, matchFields on metadata.name, NoSchedule/NoExecute taints must be
tolerated) against every node the spec produces: cloud nodes labelled as Terraform's node template labels them,
lab servers named and labelled as Chef joins them, and the control plane.
"""

from __future__ import annotations

import kubernetes_validate
import pytest

from autoscaler.core.fit import static_reason
from autoscaler.core.podspec import parse_shape
from clusterspec.errors import UserError
from clusterspec.loader import load_spec, spec_from_data
from clusterspec.names import NODE_GROUP_LABEL
from provision import addons, hardware
from provision.chef.attributes import _server
from tests.provision.kubectl_fake import fake_kubectl
from tests.support import example_spec_data, set_path

CONTROL_PLANE = (
    "cp-1",
    {"node-role.kubernetes.io/control-plane": ""},
    (("node-role.kubernetes.io/control-plane", "", "NoSchedule"),),
)


def _cluster(changes: dict | None = None):
    data = example_spec_data()
    for path, value in (changes or {}).items():
        set_path(data, path, value)
    return spec_from_data(data, "cluster.yaml")


def nodes(cluster) -> dict[str, tuple[str, dict, tuple]]:
    """Every node the spec makes: id -> (node name, labels, taints as (key, value, effect))."""
    out = {}
    for region in cluster.regions:
        for g in region.node_groups:
            asg = cluster.asg_name(region.name, g)
            labels = {**g.labels, NODE_GROUP_LABEL: asg}  # terraform/modules/node_template: node_labels
            out[asg] = (f"ip-10-0-0-{len(out)}", labels, tuple((t.key, t.value, t.effect) for t in g.taints))
    for site in cluster.sites:
        for s in site.servers:
            attrs = _server(cluster, site.name, s)  # the labels Chef's kubeadm join registers
            out[s.name] = (s.name, attrs["labels"], tuple((t.key, t.value, t.effect) for t in s.taints))
    out["control-plane"] = CONTROL_PLANE
    return out


def runs_on(doc: dict, cluster) -> set[str]:
    errors: list[str] = []
    shape = parse_shape(doc["spec"]["template"]["spec"], doc["metadata"]["namespace"], "ds", errors)
    assert shape is not None and not errors, errors
    return {
        node_id
        for node_id, (name, labels, taints) in nodes(cluster).items()
        if static_reason(shape, labels, taints, name) is None
    }


def daemonsets(cluster) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in addons.render(cluster) if d["kind"] == "DaemonSet"}


def gpu_nodes(cluster) -> set[str]:
    groups = {
        cluster.asg_name(r.name, g)
        for r in cluster.regions
        for g in r.node_groups
        if hardware.hardware(g.instance_type).gpus
    }
    servers = {s.name for site in cluster.sites for s in site.servers if s.gpus}
    return groups | servers


def test_every_manifest_passes_strict_validation():
    cluster = load_spec()
    docs = addons.render(cluster)
    assert [d["kind"] for d in docs] == ["ServiceAccount", "Service", "ConfigMap", "DaemonSet",  # NodeLocal DNSCache
                                         "DaemonSet", "DaemonSet", "Service", "NetworkPolicy", "DaemonSet"]  # fmt: skip
    for doc in docs:
        kubernetes_validate.validate(doc, cluster.kubernetes.minor + ".0", strict=True)


def test_device_plugin_and_dcgm_run_on_exactly_the_gpu_nodes_cloud_and_lab():
    cluster = load_spec()
    expected = gpu_nodes(cluster)
    assert {"titan-01", "titan-04", "dlr-us-east-2-gpu-a10g-spot"} <= expected
    assert "dlr-us-west-2-cpu" not in expected and "nas-01" not in expected
    ds = daemonsets(cluster)
    assert runs_on(ds["nvidia-device-plugin"], cluster) == expected
    assert runs_on(ds["dcgm-exporter"], cluster) == expected


def test_efa_plugin_runs_on_exactly_the_efa_groups():
    cluster = load_spec()
    expected = {
        cluster.asg_name(r.name, g)
        for r in cluster.regions
        for g in r.node_groups
        if any(hardware.hardware(t).efa for t in g.instance_types)
    }
    # p4d.24xlarge (4 EFA) and the g5.12xlarge/g5.24xlarge spot group; not g4dn.xlarge nor p3.16xlarge
    assert {n.split("-", 4)[-1] for n in expected} == {"gpu-a100x8", "gpu-a10g-spot"}
    assert runs_on(daemonsets(cluster)["aws-efa-k8s-device-plugin"], cluster) == expected


def test_a_cpu_group_labelled_and_tainted_like_a_gpu_group_is_not_selected():
    gpu_like = {
        "name": "cpu-big",
        "instance_types": ["m6i.2xlarge"],
        "min": 0,
        "max": 2,
        "labels": {"research.cluster/pool": "gpu", "research.cluster/gpu-model": "t4"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    data = example_spec_data()
    data["regions"][0]["node_groups"].append(gpu_like)
    cluster = spec_from_data(data, "cluster.yaml")
    ds = daemonsets(cluster)
    assert "dlr-us-west-2-cpu-big" not in runs_on(ds["nvidia-device-plugin"], cluster)
    assert runs_on(ds["nvidia-device-plugin"], cluster) == gpu_nodes(cluster)


def test_a_server_taint_from_the_spec_is_tolerated_and_a_new_one_is_not_needed_elsewhere():
    cluster = _cluster(
        {
            "sites.0.servers.2.taints": [
                {"key": "research.cluster/owner", "value": "vision", "effect": "NoExecute"}
            ]
        }
    )
    ds = daemonsets(cluster)
    assert "titan-01" in runs_on(ds["nvidia-device-plugin"], cluster)
    tolerations = ds["nvidia-device-plugin"]["spec"]["template"]["spec"]["tolerations"]
    assert {
        "key": "research.cluster/owner",
        "operator": "Equal",
        "value": "vision",
        "effect": "NoExecute",
    } in tolerations
    assert not any(t.get("operator") == "Exists" and not t.get("key") for t in tolerations)  # no tolerate-all


def test_a_spec_without_efa_or_gpus_renders_no_such_addon():
    no_efa = _cluster({f"regions.{i}.node_groups": [] for i in range(3)})
    names = [d["metadata"]["name"] for d in addons.render(no_efa)]
    assert "aws-efa-k8s-device-plugin" not in names and "nvidia-device-plugin" in names  # the lab's Titan X
    data = example_spec_data()
    for r in data["regions"]:
        r["node_groups"] = (
            [g for g in r["node_groups"] if g["name"] == "cpu"] if isinstance(r["node_groups"], list) else []
        )
    for s in data["sites"][0]["servers"]:
        s.update(gpus=0)
        s.pop("gpu_model", None)
    rendered = addons.render(spec_from_data(data, "cluster.yaml"))
    assert [d for d in rendered if d["metadata"]["labels"]["app.kubernetes.io/component"] != "dns"] == []


def test_images_follow_the_driver_branch():
    assert addons.images(load_spec())["device_plugin"].startswith("nvcr.io/nvidia/k8s-device-plugin:v0.17")
    old = _cluster(
        {
            "software.nvidia_driver.branch": 535,
            "software.ubuntu": "22.04",
            "software.nvidia_driver.version": "535.274.02",
            "software.cuda": "12.2",
        }
    )
    with pytest.raises(UserError) as err:
        addons.images(old)
    assert err.value.lines == [
        "software.nvidia_driver.branch: no device plugin is recorded for driver branch 535 (oldest: 550)"
    ]


def test_deploy_applies_server_side_when_the_api_answers(tmp_path):
    kubectl, log = fake_kubectl(tmp_path, reachable=True)
    path = addons.deploy_addons(load_spec(), out=tmp_path / "addons.yaml", kubectl=kubectl)
    calls = log.read_text().splitlines()
    assert calls[-1] == f"apply --server-side --field-manager=research-cluster-addons -f {path}"


def test_deploy_fails_in_one_line_without_an_api_or_on_a_rejected_apply(tmp_path):
    kubectl, _ = fake_kubectl(tmp_path, reachable=False)
    with pytest.raises(UserError) as err:
        addons.deploy_addons(load_spec(), out=tmp_path / "a.yaml", kubectl=kubectl)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith("no reachable cluster")
    assert err.value.lines[0].endswith(f"nothing was deployed; the manifests are in {tmp_path / 'a.yaml'}")
    kubectl, _ = fake_kubectl(tmp_path, reachable=True, apply_exit=1)
    with pytest.raises(UserError) as err:
        addons.deploy_addons(load_spec(), out=tmp_path / "b.yaml", kubectl=kubectl)
    assert err.value.lines == [
        f"kubectl apply -f {tmp_path / 'b.yaml'} failed: error: the server rejected it"
    ]
