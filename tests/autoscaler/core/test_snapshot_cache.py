"""The parse cache (autoscaler/core/snapshot.py ``ParseCache``): a parse reuses the last parse's pods and nodes
only where they are the very objects at the same resourceVersion, and plans the same with or without it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from autoscaler.core.config import PlannerConfig
from autoscaler.core.errors import SnapshotError
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import ParseCache, parse_snapshot
from tests.support import load_yaml

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))
GROUP = {"name": "g", "region": "us-west-2", "zones": ["us-west-2a"], "instance_type": "m6i.2xlarge", "min": 0,
         "max": 5, "desired": 1, "instances": [], "allocatable": {"cpu": "8", "memory": "30Gi"}}  # fmt: skip


def node(name: str, rv: str = "1", instance: str = "i-1", **spec) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": {}},
            "spec": {"providerID": f"aws:///us-west-2a/{instance}", **spec},
            "status": {"allocatable": {"cpu": "8", "memory": "30Gi", "pods": "110"}}}  # fmt: skip


def pod(name: str, rv: str = "1", cpu: str = "1", phase: str = "Pending", node_name: str | None = None,
        **status) -> dict:  # fmt: skip
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "lab", "resourceVersion": rv, "uid": f"uid-{name}"},
            "spec": spec, "status": {"phase": phase, **status}}  # fmt: skip


def snapshot(pods: list[dict], nodes: list[dict], **more) -> dict:
    return {
        "now": "2025-01-31T12:00:00Z",
        "groups": [copy.deepcopy(GROUP)],
        "nodes": nodes,
        "pods": pods,
        **more,
    }


def facts(snap) -> list[tuple]:
    """What the planner reads of each pod and node (shapes by what they ask for: they compare by identity)."""
    pods = [(p.key, p.phase, p.node_name, p.nominated, p.shape.requests, p.shape.affinity_terms, p.shape.unsupported)
            for p in snap.pods]  # fmt: skip
    nodes = [(n.name, n.group, n.taints, n.unschedulable, n.ready, tuple(sorted(n.allocatable.items())))
             for n in snap.nodes]  # fmt: skip
    return [*pods, *nodes]


def both(data: dict, cache: ParseCache):
    """The parse with the cache, checked against a parse without it."""
    cached = parse_snapshot(data, cache)
    assert facts(cached) == facts(parse_snapshot(copy.deepcopy(data)))
    return cached


def test_a_second_parse_of_the_same_objects_parses_nothing_again():
    cache = ParseCache()
    pods, nodes = [pod("a"), pod("b", node_name="n1", phase="Running")], [node("n1")]
    first = both(snapshot(pods, nodes), cache)
    assert (cache.parsed, cache.hits, len(cache)) == (3, 0, 3)
    second = both(snapshot(pods, nodes), cache)
    assert (cache.parsed, cache.hits) == (0, 3)
    assert second.pods[0] is first.pods[0] and second.nodes[0] is first.nodes[0]  # shared, as parsed


@pytest.mark.parametrize(
    "changed",
    [
        pod("a", rv="2", cpu="3"),  # its requests (a new pod of the same name, or a resize)
        pod("a", rv="2", phase="Running", node_name="n1"),  # bound and running
        pod("a", rv="2", phase="Succeeded", node_name="n1"),  # finished
        pod("a", rv="2", nominatedNodeName="n1"),  # nominated after a preemption
    ],
    ids=["requests", "bound", "finished", "nominated"],
)
def test_a_pod_the_watch_replaced_at_a_new_version_is_parsed_again(changed):
    cache = ParseCache()
    nodes = [node("n1")]
    before = both(snapshot([pod("a"), pod("b")], nodes), cache)
    after = both(snapshot([changed, before and pod("b")], nodes), cache)
    assert facts(after) != facts(before)
    assert after.pods[0].phase == changed["status"]["phase"]
    assert after.pods[0].node_name == changed["spec"].get("nodeName")


def test_an_object_changed_in_place_with_a_new_version_is_parsed_again():
    """A store that changes its objects in place (the simulator's) bumps their resourceVersion."""
    cache = ParseCache()
    p, n = pod("a"), node("n1")
    data = snapshot([p], [n])
    both(data, cache)
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "5"
    p["metadata"]["resourceVersion"] = "2"
    n["spec"]["unschedulable"] = True
    n["metadata"]["resourceVersion"] = "2"
    again = both(data, cache)
    assert again.pods[0].shape.request("cpu") == 5000 and again.nodes[0].unschedulable
    assert cache.parsed == 2


def test_a_relist_replaces_every_object_and_each_is_parsed_again():
    cache = ParseCache()
    pods, nodes = [pod("a"), pod("b")], [node("n1")]
    both(snapshot(pods, nodes), cache)
    relisted = copy.deepcopy((pods, nodes))  # equal objects at the same versions, new dicts
    both(snapshot(*relisted), cache)
    assert (cache.parsed, cache.hits) == (3, 0)


def test_deleted_objects_leave_the_cache():
    cache = ParseCache()
    pods, nodes = [pod(f"p{i}") for i in range(5)], [node("n1"), node("n2", instance="i-2")]
    both(snapshot(pods, nodes), cache)
    assert len(cache) == 7
    both(snapshot(pods[1:3], nodes[:1]), cache)
    assert len(cache) == 3 and cache.hits == 3


def test_objects_without_a_version_and_rejected_objects_are_never_kept():
    cache = ParseCache()
    unversioned = pod("a")
    del unversioned["metadata"]["resourceVersion"]
    bad = pod("b", cpu="lots")
    data = snapshot([unversioned, bad], [node("n1")])
    for _ in range(2):
        with pytest.raises(SnapshotError) as e:
            parse_snapshot(data, cache)
        assert any(line.startswith("pods[1] (lab/b)") for line in e.value.lines)  # reported at every parse
    assert (len(cache.pods), len(cache.nodes)) == (0, 1)
    data["pods"] = [unversioned]
    both(data, cache)
    both(data, cache)
    assert (len(cache.pods), cache.hits) == (0, 1)  # the pod without a version parsed again, the node not


def test_a_nominated_node_that_went_and_came_back():
    """The parser forgets a nomination onto a node that is not there; the cached pod keeps it for later."""
    cache = ParseCache()
    p, n1 = pod("a", nominatedNodeName="n2"), node("n1")
    n2 = node("n2", instance="i-2")
    assert both(snapshot([p], [n1, n2]), cache).pods[0].nominated == "n2"
    assert both(snapshot([p], [n1]), cache).pods[0].nominated is None
    assert both(snapshot([p], [n1, n2]), cache).pods[0].nominated == "n2"


def test_a_nodes_group_is_worked_out_at_every_parse():
    cache = ParseCache()
    n = node("n1", instance="i-9")
    data = snapshot([], [n])
    assert both(data, cache).nodes[0].group is None
    data["groups"][0]["instances"] = [{"id": "i-9", "state": "InService"}]
    assert both(data, cache).nodes[0].group == "g" and cache.hits == 1
    n2 = node("n2", instance="i-8")
    n2["metadata"]["labels"]["research.cluster/node-group"] = "g"
    data["nodes"].append(n2)
    both(data, cache)
    data["groups"][0]["name"] = "h"  # the group the label names is gone
    data["groups"][0]["instances"] = []
    assert [x.group for x in both(data, cache).nodes] == [None, None]


def test_a_pending_pods_claims_are_checked_against_the_storage_at_every_parse():
    cache = ParseCache()
    p = pod("a")
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    claim = {"metadata": {"name": "data", "namespace": "lab"}, "spec": {"storageClassName": "none"},
             "status": {"phase": "Pending"}}  # fmt: skip
    data = snapshot([p], [node("n1")], persistentvolumeclaims=[claim], storageclasses=[])
    blocked = both(data, cache).pods[0].shape.unsupported
    assert blocked  # a claim that cannot be bound keeps the pod off every node
    bound = {"name": "data", "namespace": "lab", "annotations": {"pv.kubernetes.io/bind-completed": "yes"}}
    data["persistentvolumeclaims"] = [
        dict(claim, metadata=bound, status={"phase": "Bound"}, spec={"volumeName": "v"})
    ]
    assert not both(data, cache).pods[0].shape.unsupported and cache.hits == 2


def test_a_namespace_label_change_parses_the_pods_again():
    cache = ParseCache()
    ns = [{"metadata": {"name": "lab", "labels": {"team": "a"}}}]
    data = snapshot([pod("a")], [], namespaces=ns)
    both(data, cache)
    both(data, cache)
    assert cache.hits == 1
    data["namespaces"] = [{"metadata": {"name": "lab", "labels": {"team": "b"}}}]
    both(data, cache)
    assert (cache.parsed, cache.hits) == (1, 0)


def _versioned(data: dict) -> dict:
    for kind in ("pods", "nodes"):
        items = data.get(kind) or []
        for i, obj in enumerate(items.get("items", []) if isinstance(items, dict) else items):
            if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
                obj["metadata"].setdefault("resourceVersion", str(i + 1))
    return data


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_planner_case_plans_the_same_from_the_cache(path: Path) -> None:
    case = load_yaml(path)
    config = PlannerConfig.from_dict(case.get("config") or {})
    data = _versioned(copy.deepcopy(case["snapshot"]))
    want = plan(parse_snapshot(copy.deepcopy(data)), config).to_dict(placements=True)
    cache = ParseCache()
    plan(parse_snapshot(data, cache), config)
    got = plan(parse_snapshot(data, cache), config).to_dict(placements=True)
    assert cache.parsed == 0
    assert got == want


def test_a_cached_object_changed_in_place_into_something_else_is_parsed_and_reported():
    cache = ParseCache()
    p = pod("a")
    data = snapshot([p], [node("n1")])
    both(data, cache)
    p["metadata"] = "gone"
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(data, cache)
    assert e.value.lines == ["pods[0].metadata.name: missing; every object needs a name"]
