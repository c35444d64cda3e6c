"""Killing pods with their instance, evictions under disruption budgets, job restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.model import ModelCloud, ModelCluster, ValidationError
from simulator.model.disruption import budget_status
from tests.simulator.model.builders import gang, group, model, phases, pod
from tests.support import load_yaml

PDB_CASES = load_yaml(Path(__file__).parent / "pdb_cases.yaml")


def test_terminating_an_instance_kills_its_running_pods_and_counts_the_job_once():
    m = model(group(desired=2), restart_jobs=False)
    for p in gang("dist", 2):
        m.submit_pod(p)
    m.submit_pod(pod("other", gpus=0, cpu="1", duration=None))  # fits next to a gang member
    cloud = ModelCloud(m)
    (g,) = cloud.list_groups()
    victim = g["instances"][0]["id"]
    cloud.terminate_instance("g8", victim)
    assert cloud.list_groups()[0]["desired"] == 1
    failed = {
        p["metadata"]["name"]: p["status"]["reason"] for p in m.pods() if p["status"]["phase"] == "Failed"
    }
    assert set(failed) >= {"dist-0", "dist-1"}, "a gang dies with any of its workers"
    assert failed["dist-0"] in ("InstanceTerminated", "GangMemberLost")
    jobs = 2 if "other" in failed else 1
    assert m.stats.jobs_killed == jobs
    assert len(m.nodes()) == 1


def test_killed_job_pods_are_recreated_pending_by_default():
    m = model(group(desired=1, min=0))
    m.submit_pod(pod("j", gpus=8, job="j"))
    node = m.nodes()[0]
    instance = node["spec"]["providerID"].rsplit("/", 1)[1]
    ModelCloud(m).terminate_instance("g8", instance)
    assert phases(m) == {"j": "Failed", "j-r1": "Pending"}
    assert m.stats.pods_restarted == 1 and m.stats.jobs_killed == 1


def test_terminate_below_min_or_unknown_instance_is_refused():
    m = model(group(desired=1, min=1))
    cloud = ModelCloud(m)
    with pytest.raises(ValidationError, match="min"):
        cloud.terminate_instance("g8", cloud.list_groups()[0]["instances"][0]["id"])
    with pytest.raises(ValidationError, match="not found"):
        cloud.terminate_instance("g8", "i-nope")


def test_deleting_a_node_kills_its_pods():
    m = model(group(desired=1), restart_jobs=False)
    m.submit_pod(pod("a", gpus=1, duration=None))
    ModelCluster(m).delete_node(m.nodes()[0]["metadata"]["name"])
    assert m.nodes() == [] and phases(m) == {"a": "Failed"}
    assert m.stats.pods_killed == 1


@pytest.mark.parametrize("case", PDB_CASES, ids=[c["name"] for c in PDB_CASES])
def test_eviction_follows_the_disruption_budget(case):
    m = model(group(desired=4))
    for i in range(case["running"]):
        m.submit_pod(pod(f"w{i}", gpus=1, duration=None, labels={"app": "w"}))
    for i in range(case.get("pending", 0)):
        m.submit_pod(pod(f"p{i}", gpus=9, duration=None, labels={"app": "w"}))
    m.store.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "b", "namespace": "research"},
            "spec": {"selector": {"matchLabels": {"app": "w"}}, **case["spec"]},
        },
    )
    status = budget_status(m.pdbs()[0], m.pods())
    assert status["disruptionsAllowed"] == case["allowed"]
    target = case.get("evict", "w0")
    assert ModelCluster(m).evict_pod("research", target) is case["evictable"]
    names = {p["metadata"]["name"] for p in m.pods()}
    assert (target not in names) is case["evictable"]


def test_evicted_job_pod_is_replaced_and_budget_refusals_are_counted():
    m = model(group(desired=1))
    m.submit_pod(pod("t", gpus=8, job="t", labels={"app": "t"}))
    m.store.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "b", "namespace": "research"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "t"}}},
        },
    )
    assert m.evict_pod("research", "t") is False
    assert m.stats.evictions_refused == 1
    m.store.delete("poddisruptionbudgets", "research", "b")
    assert m.evict_pod("research", "t") is True
    assert phases(m) == {"t-r1": "Running"}
    assert m.stats.pods_evicted == 1 and m.stats.jobs_killed == 0


def test_adapter_delete_node_is_idempotent_like_the_kubernetes_adapter():
    m = model(group(desired=1))
    cluster = ModelCluster(m)
    name = m.nodes()[0]["metadata"]["name"]
    cluster.delete_node(name)
    cluster.delete_node(name)
    assert m.nodes() == [] and cluster.calls["delete_node"] == 2
