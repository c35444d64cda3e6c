"""Garbage collection of finished pods and events, the controller's state, plain objects with versions."""

from __future__ import annotations

import ipaddress

import pytest

from simulator.model import ModelCluster
from simulator.model.store import AlreadyExists, Conflict
from tests.simulator.model.builders import group, model, phases, pod


def _events_for(m, namespace: str, name: str) -> list[dict]:
    return [
        e for e in m.store.list("events", namespace) if (e.get("involvedObject") or {}).get("name") == name
    ]


def test_finished_pods_are_collected_after_the_ttl_and_their_records_kept():
    m = model(group(desired=1), terminated_pod_ttl_s=100)
    m.submit_pod(pod("a", duration=10))
    m.advance(109)
    assert phases(m) == {"a": "Succeeded"}
    m.advance(110)
    assert phases(m) == {}
    (rec,) = [r for r in m.records.values() if r.namespace == "research"]
    assert (rec.name, rec.created, rec.started, rec.finished, rec.outcome) == (
        "a",
        0.0,
        0.0,
        10.0,
        "Succeeded",
    )


def test_events_are_recorded_on_pods_and_expire():
    m = model(group(desired=1), event_ttl_s=60)
    cluster = ModelCluster(m)
    m.submit_pod(pod("a", gpus=1, duration=None))
    cluster.record_event(m.pod("research", "a"), "NotTriggerScaleUp", "no group fits", "Warning")
    (event,) = _events_for(m, "research", "a")
    assert (event["reason"], event["type"], event["involvedObject"]["kind"]) == (
        "NotTriggerScaleUp",
        "Warning",
        "Pod",
    )
    m.advance(60)
    assert _events_for(m, "research", "a") == []


def test_model_events_when_asked_for():
    m = model(group(desired=1), record_model_events=True)
    m.submit_pod(pod("a", gpus=1))
    m.settle()
    assert [e["reason"] for e in _events_for(m, "research", "a")] == ["Scheduled"]


def test_controller_state_round_trips_through_a_configmap():
    m = model(group())
    cluster = ModelCluster(m)
    assert cluster.read_state() == {}
    cluster.write_state({"backoff": "{}"})
    cluster.write_state({"backoff": '{"g8": 1}'})
    assert cluster.read_state() == {"backoff": '{"g8": 1}'}
    assert m.store.get("configmaps", "kube-system", "research-autoscaler-state")["data"] == {
        "backoff": '{"g8": 1}'
    }


def test_leases_conflict_on_a_stale_resource_version():
    m = model(group())
    lease = {"metadata": {"name": "leader", "namespace": "kube-system"}, "spec": {"holderIdentity": "a"}}
    created = m.store.create("leases", lease)
    stale = created["metadata"]["resourceVersion"]
    with pytest.raises(AlreadyExists):
        m.store.create("leases", {"metadata": {"name": "leader", "namespace": "kube-system"}})
    m.store.replace(
        "leases",
        {
            "metadata": {"name": "leader", "namespace": "kube-system", "resourceVersion": stale},
            "spec": {"holderIdentity": "b"},
        },
    )
    with pytest.raises(Conflict):
        m.store.replace(
            "leases",
            {
                "metadata": {"name": "leader", "namespace": "kube-system", "resourceVersion": stale},
                "spec": {"holderIdentity": "c"},
            },
        )
    assert m.store.get("leases", "kube-system", "leader")["spec"]["holderIdentity"] == "b"


def test_watch_listeners_see_every_change_in_order():
    m = model(group(desired=1))
    seen = []
    m.subscribe(lambda kind, event, obj: seen.append((kind, event, int(obj["metadata"]["resourceVersion"]))))
    m.submit_pod(pod("a", duration=5))
    m.advance(5)
    assert [(k, e) for k, e, _ in seen] == [("pods", "ADDED"), ("pods", "MODIFIED"), ("pods", "MODIFIED")]
    assert [rv for _, _, rv in seen] == sorted(rv for _, _, rv in seen)


def test_nodes_of_a_group_that_knows_its_vpc_get_addresses_of_their_zones_private_subnet():
    m = model(group(desired=4, **{"x-vpc-cidr": "10.1.0.0/16"}))
    m.advance(3600)
    nodes = m.nodes()
    assert len(nodes) == 4
    for n in nodes:
        ip = next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
        zone = n["metadata"]["labels"]["topology.kubernetes.io/zone"]
        subnet = "10.1.0.0/19" if zone == "us-west-2a" else "10.1.32.0/19"  # cidrsubnet(vpc, 3, zone index)
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(subnet)
        assert n["metadata"]["name"] == f"ip-{ip.replace('.', '-')}.us-west-2.compute.internal"
