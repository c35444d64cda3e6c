"""The emulator over the wire with the unmodified official Kubernetes client."""

from __future__ import annotations

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from autoscaler.emulator import Emulator
from tests.autoscaler.model.builders import pod


def _pod(name: str, **kw) -> dict:
    p = pod(name, **kw)
    p.update(apiVersion="v1", kind="Pod")
    return p


def _names(items) -> list[str]:
    return [i.metadata.name for i in items]


def test_discovery_and_version(api_client):
    assert client.VersionApi(api_client).get_code().git_version == "v1.35.8"
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"policy", "coordination.k8s.io", "events.k8s.io", "apps"} <= groups
    resources = {r.name for r in client.CoreV1Api(api_client).get_api_resources().resources}
    assert {"pods", "pods/eviction", "nodes", "configmaps", "events"} <= resources


def test_pods_are_created_scheduled_and_listed_with_selectors(core, emu):
    for i in range(5):
        core.create_namespaced_pod("research", _pod(f"p{i}", gpus=4, labels={"app": "a" if i % 2 else "b"}))
    pods = core.list_namespaced_pod("research").items
    assert _names(pods) == [f"p{i}" for i in range(5)]
    assert [p.status.phase for p in pods] == ["Running"] * 4 + ["Pending"]
    node = pods[0].spec.node_name
    assert _names(core.list_pod_for_all_namespaces(label_selector="app=a").items) == ["p1", "p3"]
    assert _names(core.list_pod_for_all_namespaces(label_selector="app in (a,b),app!=b").items) == [
        "p1",
        "p3",
    ]
    on_node = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    assert {p.spec.node_name for p in on_node} == {node} and len(on_node) == 4  # 2 pods, agent, device plugin
    assert _names(core.list_pod_for_all_namespaces(field_selector="status.phase=Pending").items) == ["p4"]
    assert _names(core.list_pod_for_all_namespaces(field_selector="metadata.name=p2").items) == ["p2"]
    system = core.list_pod_for_all_namespaces(field_selector="metadata.namespace=kube-system").items
    assert {p.metadata.namespace for p in system} == {"kube-system"} and len(system) == 4
    assert core.read_namespaced_pod("p0", "research").spec.node_name == node


def test_list_pages_with_limit_and_continue(core):
    for i in range(5):
        core.create_namespaced_pod("research", _pod(f"p{i}", gpus=0, cpu="10m"))
    first = core.list_namespaced_pod("research", limit=2)
    assert _names(first.items) == ["p0", "p1"] and first.metadata.remaining_item_count == 3
    second = core.list_namespaced_pod("research", limit=2, _continue=first.metadata._continue)
    third = core.list_namespaced_pod("research", limit=2, _continue=second.metadata._continue)
    assert _names(second.items) == ["p2", "p3"] and _names(third.items) == ["p4"]
    assert third.metadata._continue is None
    assert first.metadata.resource_version == third.metadata.resource_version


def test_watch_streams_changes_and_resumes_from_a_resource_version(core, emu):
    rv = core.list_namespaced_pod("research").metadata.resource_version
    core.create_namespaced_pod("research", _pod("w", duration=30))
    with emu.model.lock:
        emu.model.advance(emu.model.now() + 30)
    w = watch.Watch()
    seen = [
        (e["type"], e["object"].status.phase)
        for e in w.stream(core.list_namespaced_pod, "research", resource_version=rv, timeout_seconds=1)
    ]
    assert seen[0] == ("ADDED", "Pending")
    assert ("MODIFIED", "Running") in seen and seen[-1] == ("MODIFIED", "Succeeded")
    last = w.resource_version
    core.delete_namespaced_pod("w", "research")
    again = [
        e["type"]
        for e in w.stream(core.list_namespaced_pod, "research", resource_version=last, timeout_seconds=1)
    ]
    assert again == ["DELETED"]


def test_watch_without_version_starts_with_the_current_objects_and_sends_bookmarks(core):
    events = list(watch.Watch().stream(core.list_node, allow_watch_bookmarks=True, timeout_seconds=1))
    types = [e["type"] for e in events]
    assert types[:2] == ["ADDED", "ADDED"] and "BOOKMARK" in types[2:]


def test_watch_from_a_compacted_version_is_gone_and_a_relist_recovers(core, emu):
    rv = core.list_node().metadata.resource_version
    core.create_namespaced_pod("research", _pod("x"))
    emu.api.hub.compact()
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1))
    assert err.value.status == 410
    fresh = core.list_node().metadata.resource_version
    assert int(fresh) > int(rv)
    events = list(watch.Watch().stream(core.list_node, resource_version=fresh, timeout_seconds=1))
    assert events == []


def test_continue_token_from_before_compaction_is_gone(core, emu):
    for i in range(3):
        core.create_namespaced_pod("research", _pod(f"c{i}", gpus=0, cpu="10m"))
    page = core.list_namespaced_pod("research", limit=1)
    core.create_namespaced_pod("research", _pod("late", gpus=0, cpu="10m"))
    emu.api.hub.compact()
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod("research", limit=1, _continue=page.metadata._continue)
    assert err.value.status == 410


@pytest.mark.parametrize(
    ("kind", "body", "expect_taints"),
    [
        ("strategic", {"spec": {"taints": [{"key": "t", "value": "1", "effect": "NoSchedule"}]}}, ["t"]),
        (
            "json",
            [{"op": "add", "path": "/spec/taints/-", "value": {"key": "t", "effect": "NoSchedule"}}],
            ["nvidia.com/gpu", "t"],
        ),
    ],
)
def test_node_patches(core, kind, body, expect_taints):
    name = core.list_node().items[0].metadata.name
    node = core.patch_node(name, body)
    assert [t.key for t in node.spec.taints] == expect_taints


def test_merge_patch_sets_and_removes_annotations(core, api_client):
    name = core.list_node().items[0].metadata.name
    api_client.set_default_header("Content-Type", "application/merge-patch+json")
    core.patch_node(name, {"metadata": {"annotations": {"a": "1", "b": "2"}}})
    node = core.patch_node(name, {"metadata": {"annotations": {"a": None}}})
    assert node.metadata.annotations == {"b": "2"}


def test_cordon_by_patch_stops_scheduling(core):
    names = _names(core.list_node().items)
    for n in names:
        core.patch_node(n, {"spec": {"unschedulable": True}})
    core.create_namespaced_pod("research", _pod("blocked", gpus=1))
    assert core.read_namespaced_pod("blocked", "research").status.phase == "Pending"
    core.patch_node(names[0], {"spec": {"unschedulable": None}})
    assert core.read_namespaced_pod("blocked", "research").status.phase == "Running"


def test_eviction_refused_by_a_budget_is_429_then_allowed(core, api_client):
    core.create_namespaced_pod("research", _pod("guarded", job="guarded", labels={"app": "g"}))
    policy = client.PolicyV1Api(api_client)
    policy.create_namespaced_pod_disruption_budget(
        "research",
        {"metadata": {"name": "g"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "g"}}}},
    )
    pdb = policy.read_namespaced_pod_disruption_budget("g", "research")
    assert pdb.status.disruptions_allowed == 0 and pdb.status.current_healthy == 1
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="guarded", namespace="research"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_eviction("guarded", "research", eviction)
    assert err.value.status == 429 and "disruption budget" in err.value.body
    policy.delete_namespaced_pod_disruption_budget("g", "research")
    core.create_namespaced_pod_eviction("guarded", "research", eviction)
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod("guarded", "research")
    assert gone.value.status == 404
    assert '"reason": "NotFound"' in gone.value.body or '"reason":"NotFound"' in gone.value.body


def test_lease_optimistic_concurrency(api_client):
    coord = client.CoordinationV1Api(api_client)
    body = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    lease = coord.create_namespaced_lease("kube-system", body)
    with pytest.raises(ApiException) as dup:
        coord.create_namespaced_lease("kube-system", body)
    assert dup.value.status == 409
    lease.spec.holder_identity = "b"
    updated = coord.replace_namespaced_lease("leader", "kube-system", lease)
    assert updated.spec.holder_identity == "b"
    lease.spec.holder_identity = "c"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as stale:
        coord.replace_namespaced_lease("leader", "kube-system", lease)
    assert stale.value.status == 409
    assert coord.read_namespaced_lease("leader", "kube-system").spec.holder_identity == "b"


def test_configmaps_and_events(core, api_client, emu):
    core.create_namespaced_config_map("kube-system", {"metadata": {"name": "state"}, "data": {"k": "v"}})
    cm = core.read_namespaced_config_map("state", "kube-system")
    cm.data["k"] = "w"
    assert core.replace_namespaced_config_map("state", "kube-system", cm).data == {"k": "w"}
    core.create_namespaced_pod("research", _pod("e"))
    core.create_namespaced_event(
        "research",
        {
            "metadata": {"generateName": "e."},
            "involvedObject": {"kind": "Pod", "name": "e", "namespace": "research"},
            "reason": "TriggeredScaleUp",
            "message": "pod triggered scale-up",
            "type": "Normal",
        },
    )
    client.EventsV1Api(api_client).create_namespaced_event(
        "research",
        {
            "metadata": {"name": "e.v1"},
            "regarding": {"kind": "Pod", "name": "e", "namespace": "research"},
            "reason": "NotTriggerScaleUp",
            "note": "no group fits",
            "type": "Normal",
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "research-autoscaler",
            "reportingInstance": "a",
            "action": "ScaleUp",
        },
    )
    reasons = {
        e.reason for e in core.list_namespaced_event("research", field_selector="involvedObject.name=e").items
    }
    assert reasons == {"TriggeredScaleUp", "NotTriggerScaleUp"}
    notes = {e.note for e in client.EventsV1Api(api_client).list_namespaced_event("research").items}
    assert notes == {"pod triggered scale-up", "no group fits"}
    assert {e["reason"] for e in emu.model.events_for("research", "e")} == reasons


def test_deleting_a_node_kills_its_pods(core, emu):
    core.create_namespaced_pod("research", _pod("victim", job="victim"))
    node = core.read_namespaced_pod("victim", "research").spec.node_name
    core.delete_node(node)
    assert node not in _names(core.list_node().items)
    assert core.read_namespaced_pod("victim", "research").status.phase == "Failed"
    assert emu.model.stats.jobs_killed == 1


def test_errors_are_status_objects(core):
    with pytest.raises(ApiException) as err:
        core.read_node("missing")
    assert err.value.status == 404 and '"kind": "Status"' in err.value.body
    with pytest.raises(ApiException) as bad:
        core.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    assert bad.value.status == 400


def test_binds_only_to_loopback():
    with pytest.raises(ValueError, match="loopback"):
        Emulator(host="0.0.0.0")
