"""The scheduler: bind, run, finish, gangs, taints, cordons."""

from __future__ import annotations

from simulator.model import ModelCluster
from tests.simulator.model.builders import gang, group, model, phases, pod, run_until_quiet


def test_pod_binds_runs_for_its_duration_and_succeeds():
    m = model(group(desired=1))
    m.submit_pod(pod("a", gpus=4, duration=100))
    p = m.pod("research", "a")
    assert p["status"]["phase"] == "Running"
    assert p["spec"]["nodeName"] == m.nodes()[0]["metadata"]["name"]
    m.advance(99)
    assert phases(m) == {"a": "Running"}
    m.advance(100)
    assert phases(m) == {"a": "Succeeded"}
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["reason"] == "Completed" and term["exitCode"] == 0
    rec = m.records[p["metadata"]["uid"]]
    assert (rec.started, rec.finished, rec.outcome) == (0.0, 100.0, "Succeeded")


def test_pod_without_duration_runs_until_deleted():
    m = model(group(desired=1))
    m.submit_pod(pod("svc", gpus=1, duration=None))
    m.advance(10_000)
    assert phases(m) == {"svc": "Running"}
    m.delete_pod("research", "svc")
    m.submit_pod(pod("next", gpus=8))
    assert phases(m) == {"next": "Running"}


def test_pending_pod_is_marked_unschedulable_and_binds_when_a_node_registers():
    m = model(group(), boot_delays={"p3": 200})
    m.submit_pod(pod("a"))
    (cond,) = m.pod("research", "a")["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    m.cloud.set_desired("g8", 1)
    m.advance(200)  # registered, NotReady; Ready at 220; the GPUs advertised 30 s later
    assert len(m.nodes()) == 1
    m.advance(249)
    assert phases(m) == {"a": "Pending"}
    m.advance(250)
    assert phases(m) == {"a": "Running"}
    assert m.records[m.pod("research", "a")["metadata"]["uid"]].started == 250


def test_freed_room_goes_to_the_oldest_pending_pod():
    m = model(group(desired=1))
    m.submit_pod(pod("first", duration=50))
    m.submit_pod(pod("second", duration=50))
    m.submit_pod(pod("third", duration=50))
    m.advance(50)
    assert phases(m) == {"first": "Succeeded", "second": "Running", "third": "Pending"}


def test_gpu_pods_are_packed_best_fit():
    m = model(group(desired=2))
    m.submit_pod(pod("six", gpus=6, duration=None))
    m.submit_pod(pod("two", gpus=2, duration=None))
    m.submit_pod(pod("eight", gpus=8, duration=None))
    assert phases(m) == {"six": "Running", "two": "Running", "eight": "Running"}
    assert m.pod("research", "six")["spec"]["nodeName"] == m.pod("research", "two")["spec"]["nodeName"]


def test_untolerated_taint_keeps_a_pod_off_the_node():
    m = model(group(desired=1))
    p = pod("no-toleration")
    p["spec"]["tolerations"] = []
    m.submit_pod(p)
    assert phases(m) == {"no-toleration": "Pending"}
    assert "nvidia.com/gpu" in m.pod("research", "no-toleration")["status"]["conditions"][0]["message"]


def test_node_selector_is_respected():
    m = model(group(desired=1))
    p = pod("picky", gpus=1)
    p["spec"]["nodeSelector"] = {"research.cluster/gpu-model": "a100"}
    m.submit_pod(p)
    assert phases(m) == {"picky": "Pending"}


def test_tainting_stops_binding_and_untainting_resumes_it():
    m = model(group(desired=1))
    cluster = ModelCluster(m)
    name = m.nodes()[0]["metadata"]["name"]
    cluster.taint_node(name, {"key": "research.cluster/to-be-deleted", "value": "1", "effect": "NoSchedule"})
    m.submit_pod(pod("a", gpus=1))
    assert phases(m) == {"a": "Pending"}
    cluster.untaint_node(name, "research.cluster/to-be-deleted")
    assert phases(m) == {"a": "Running"}


def test_gang_binds_all_or_nothing():
    m = model(group(desired=1), boot_delays={"p3": 100})
    for p in gang("big", 3):
        m.submit_pod(p)
    assert set(phases(m).values()) == {"Pending"}
    m.cloud.set_desired("g8", 2)
    run_until_quiet(m, 160)  # registered at 100, Ready at 120, GPUs at 150
    assert set(phases(m).values()) == {"Pending"}, "two nodes for a gang of three: none may start"
    m.cloud.set_desired("g8", 3)
    run_until_quiet(m, 320)
    assert set(phases(m).values()) == {"Running"}
    starts = {p["status"]["startTime"] for p in m.pods() if p["metadata"]["namespace"] == "research"}
    assert len(starts) == 1
    run_until_quiet(m, 1000)
    assert set(phases(m).values()) == {"Succeeded"}


def test_gang_does_not_block_smaller_pods_behind_it():
    m = model(group(desired=1))
    for p in gang("big", 2):
        m.submit_pod(p)
    m.submit_pod(pod("small", gpus=1))
    assert phases(m) == {"big-0": "Pending", "big-1": "Pending", "small": "Running"}


def test_pod_group_waits_for_its_declared_size():
    m = model(group(desired=3))
    members = [
        pod(
            f"pg-{i}",
            labels={"scheduling.x-k8s.io/pod-group": "pg"},
            annotations={"research.cluster/pod-group-size": "3"},
        )
        for i in range(3)
    ]
    for p in members:
        p["spec"]["schedulerName"] = "research-gang-scheduler"  # only the gang scheduler places a group whole
    m.submit_pod(members[0])
    m.submit_pod(members[1])
    assert set(phases(m).values()) == {"Pending"}
    m.submit_pod(members[2])
    assert set(phases(m).values()) == {"Running"}


def test_daemonset_pods_run_on_every_node_and_take_room():
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "63"}}}],
                    "tolerations": [{"operator": "Exists"}],
                },
            }
        },
    }
    m = model(group(desired=2), daemonsets=[ds])
    agents = [p for p in m.pods() if p["metadata"]["name"].startswith("agent-")]
    assert len(agents) == 2 and {p["status"]["phase"] for p in agents} == {"Running"}
    assert agents[0]["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    m.submit_pod(pod("needs-cpu", gpus=1, cpu="2"))
    assert phases(m) == {"needs-cpu": "Pending"}, "63 of 63.26 CPUs taken by the DaemonSet pod"
