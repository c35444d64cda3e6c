"""Snapshot parsing: the accepted forms and every bad input as one clear line (bad_snapshots.yaml)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from autoscaler.core.errors import SnapshotError
from autoscaler.core.snapshot import parse_snapshot
from tests.support import load_yaml, set_path

DATA = load_yaml(Path(__file__).parent / "bad_snapshots.yaml")


def test_base_is_valid() -> None:
    snap = parse_snapshot(copy.deepcopy(DATA["base"]))
    assert [g.name for g in snap.groups] == ["g"]
    assert snap.nodes[0].group is None  # i-1 is not among the group's instances and there is no group label
    assert snap.regions == ["us-west-2"]  # from the groups when not given


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_bad_snapshot(case: dict) -> None:
    data = copy.deepcopy(DATA["base"])
    for path, value in (case.get("set") or {}).items():
        set_path(data, path, value)
    if "replace" in case:
        data = case["replace"]
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(data)
    assert e.value.lines == case["errors"]


def test_kubectl_list_objects_and_group_membership() -> None:
    data = copy.deepcopy(DATA["base"])
    data["groups"][0]["instances"] = [{"id": "i-1", "state": "InService"}]
    data["nodes"] = {"apiVersion": "v1", "kind": "List", "items": data["nodes"]}
    data["pods"] = {"apiVersion": "v1", "kind": "List", "items": data["pods"]}
    data["nodes"]["items"].append(
        {
            "metadata": {"name": "n2", "labels": {"research.cluster/node-group": "g"}},
            "status": {"allocatable": {}},
        }
    )
    snap = parse_snapshot(data)
    assert [(n.name, n.group, n.instance_id, n.zone) for n in snap.nodes] == [
        ("n1", "g", "i-1", "us-west-2a"),
        ("n2", "g", None, None),
    ]


def test_allocatable_from_the_instance_table() -> None:
    data = copy.deepcopy(DATA["base"])
    del data["groups"][0]["allocatable"]
    g = parse_snapshot(data).groups[0]
    # m6i.2xlarge: 8 vCPU, 32 GiB, less what the join's KubeletConfiguration reserves (clusterspec.kubelet_reserved:
    # nodeadm's 90m of CPU for 8 cores + 100m system; 11 MiB x 110 pods + 255 MiB + 512 MiB system + 100 MiB eviction)
    assert g.allocatable["cpu"] == 7810  # milli-CPU
    assert g.allocatable["memory"] == (32 * 1024 - (11 * 110 + 255 + 512 + 100)) * 2**20 * 1000  # milli-bytes
    assert g.allocatable["pods"] == 110_000
    assert g.price_per_hour == 0.384


def test_errors_are_collected_from_many_objects() -> None:
    data = copy.deepcopy(DATA["base"])
    data["pods"].append(copy.deepcopy(data["pods"][0]))
    data["pods"][1]["metadata"]["name"] = "q"
    for p in data["pods"]:
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x"
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(data)
    assert len(e.value.lines) == 2
