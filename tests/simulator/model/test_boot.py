"""Launch, boot and registration of nodes."""

from __future__ import annotations

import pytest

from clusterspec.names import NODE_GROUP_LABEL
from simulator.model import ModelCloud, ModelCluster, ValidationError
from simulator.model.boot import boot_delay
from tests.simulator.model.builders import group, model

BOOT_CASES = [
    ("p3.16xlarge", None, 270.0),
    ("p4d.24xlarge", None, 330.0),
    ("p5.48xlarge", None, 360.0),
    ("g4dn.xlarge", None, 180.0),
    ("m6i.2xlarge", None, 90.0),
    ("p3.16xlarge", {"p3": 30}, 30.0),
    ("c5.large", {"default": 5}, 5.0),
    ("g5.12xlarge", {"g5.12xlarge": 7, "g5": 100}, 7.0),
]


@pytest.mark.parametrize(("itype", "override", "expected"), BOOT_CASES)
def test_boot_delay_per_family(itype, override, expected):
    assert boot_delay(itype, override) == expected


def test_instance_boots_then_node_registers_with_group_identity():
    m = model(group(), boot_delays={"p3": 300})
    cloud = ModelCloud(m)
    cloud.set_desired("g8", 1)
    (g,) = cloud.list_groups()
    (inst,) = g["instances"]
    assert inst["state"] == "Pending" and g["desired"] == 1
    m.advance(40)
    assert cloud.list_groups()[0]["instances"][0]["state"] == "InService"
    m.advance(299)
    assert m.nodes() == []
    m.advance(300)
    (node,) = ModelCluster(m).list_nodes()
    labels = node["metadata"]["labels"]
    assert labels[NODE_GROUP_LABEL] == "g8"
    assert labels["research.cluster/pool"] == "gpu"
    assert labels["node.kubernetes.io/instance-type"] == "p3.16xlarge"
    assert labels["topology.kubernetes.io/zone"] == inst["zone"]
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    assert node["spec"]["providerID"] == f"aws:///{inst['zone']}/{inst['id']}"
    assert node["spec"]["taints"][0] == {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    m.advance(350)  # Ready at 320, the device plugin's GPUs at 350 (test_lifecycle.py has the stages)
    (node,) = m.nodes()
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"


def test_instances_spread_over_zones():
    m = model(group())
    ModelCloud(m).set_desired("g8", 4)
    zones = sorted(i["zone"] for i in ModelCloud(m).list_groups()[0]["instances"])
    assert zones == ["us-west-2a", "us-west-2a", "us-west-2b", "us-west-2b"]


def test_initial_desired_instances_start_registered():
    m = model(group(desired=2, min=1))
    assert len(m.nodes()) == 2
    assert {i["state"] for i in ModelCloud(m).list_groups()[0]["instances"]} == {"InService"}


@pytest.mark.parametrize("desired", [11, -1])
def test_desired_outside_min_max_is_a_validation_error(desired):
    m = model(group(max=10))
    with pytest.raises(ValidationError):
        ModelCloud(m).set_desired("g8", desired)


def test_unknown_group_is_a_validation_error():
    with pytest.raises(ValidationError, match="not found"):
        ModelCloud(model(group())).set_desired("nope", 1)


def test_api_calls_are_counted_per_method():
    m = model(group())
    cloud = ModelCloud(m)
    cloud.list_groups()
    cloud.list_groups()
    cloud.set_desired("g8", 1)
    assert cloud.calls == {"list_groups": 2, "set_desired": 1}


def test_instance_history_keeps_launch_registration_and_termination_times():
    m = model(group(), boot_delays={"p3": 100})
    cloud = ModelCloud(m)
    cloud.set_desired("g8", 1)
    m.advance(150)
    cloud.set_desired("g8", 0)
    (inst,) = m.cloud.history
    assert (inst.launched_at, inst.registered_at, inst.terminated_at) == (0.0, 100.0, 150.0)
    assert cloud.list_groups()[0]["instances"] == []
