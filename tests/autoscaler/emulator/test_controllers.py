"""kube-controller-manager's controllers and the schedulers, through the API (autoscaler/model/controllers/):
the Job controller (pkg/controller/job: backoffLimit, podFailurePolicy, no new pods once failing, survivors
deleted, Indexed completion), Deployments and ReplicaSets, the garbage collector's propagation policies, the
ServiceAccount controller, and kube-scheduler's rule that only the scheduler a pod names binds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.support import load_yaml

T0 = 1_767_225_600.0
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists"}]  # the test group's nodes are GPU nodes
CASES = load_yaml(Path(__file__).parent / "job_controller_cases.yaml")


@pytest.fixture
def emu():
    model = ClusterModel(VirtualClock(start=T0), [group(desired=2)])
    with Emulator(model, namespaces=("lab",)) as e:
        yield e


def call(emu, method, path, body=None, ctype="application/json"):
    reply = emu.api.handle(method, path, {}, ctype, json.dumps(body).encode() if body is not None else b"")
    return reply.status, reply.body


def advance(emu, seconds):
    with emu.model.lock:
        emu.model.advance(emu.model.now() + seconds)


def pods_of(emu, job):
    with emu.model.lock:
        return sorted((p for p in emu.model.store.list("pods", "lab")
                       if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == job),
                      key=lambda p: p["metadata"]["name"])  # fmt: skip


def job(name, spec, exit_code=None, duration=5):
    annotations = {"research.cluster/duration-s": str(duration)}
    if exit_code is not None:
        annotations["research.cluster/exit-code"] = str(exit_code)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "template": {"metadata": {"annotations": annotations}, "spec": {
                "restartPolicy": "Never", "tolerations": TOLERATE,
                "containers": [{"name": "main", "image": "busybox:1.36"}]}}}}  # fmt: skip


def conditions(emu, name):
    _, body = call(emu, "GET", f"/apis/batch/v1/namespaces/lab/jobs/{name}")
    return {c["type"]: c for c in body["status"].get("conditions") or () if c["status"] == "True"}, body[
        "status"
    ]


@pytest.mark.parametrize("case", CASES, ids=[c["rule"] for c in CASES])
def test_the_job_controller(emu, case) -> None:
    code, body = call(
        emu, "POST", "/apis/batch/v1/namespaces/lab/jobs", job("j", case["spec"], case.get("exit_code"))
    )
    assert code == 201, body
    for _ in range(case.get("rounds", 12)):
        advance(emu, 30)
    conds, status = conditions(emu, "j")
    assert set(conds) >= set(case["conditions"]), (conds, status)
    for key, value in (case.get("status") or {}).items():
        assert status.get(key) == value, (key, status)
    if "reason" in case:
        assert conds[case["conditions"][-1]]["reason"] == case["reason"]
    if "message" in case:
        assert case["message"] in conds[case["conditions"][-1]]["message"]
    live = [p for p in pods_of(emu, "j") if p["status"]["phase"] in ("Pending", "Running")]
    if conds.get("Complete") or conds.get("Failed"):
        assert live == [], "a finished Job leaves no pod running"
    else:
        assert len(live) == 1, "an Ignore-d failure is replaced"


def test_a_failed_gang_loses_its_survivors_and_gets_no_new_pods(emu) -> None:
    """Indexed, two workers; one fails with an exit code a FailJob rule matches: the other is deleted, no pod is made."""
    spec = {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 6,
            "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}}]}}  # fmt: skip
    call(emu, "POST", "/apis/batch/v1/namespaces/lab/jobs", job("g", spec, duration=3600))
    advance(emu, 1)
    first, second = pods_of(emu, "g")
    assert [p["spec"]["hostname"] for p in (first, second)] == ["g-0", "g-1"]
    # worker 0 exits 3 (its simulated container ends now with that code)
    with emu.model.lock:
        first["metadata"]["annotations"]["research.cluster/exit-code"] = "3"
        emu.model._complete(first)
        emu.model.settle()
    conds, status = conditions(emu, "g")
    assert conds["Failed"]["reason"] == "PodFailurePolicy"
    assert (
        conds["Failed"]["message"]
        == f"Container main for pod lab/{first['metadata']['name']} failed with exit code 3 matching FailJob rule at index 0"
    )
    assert [p["metadata"]["name"] for p in pods_of(emu, "g")] == [first["metadata"]["name"]], (
        "the survivor is deleted"
    )
    advance(emu, 600)
    assert not [p for p in pods_of(emu, "g") if p["status"]["phase"] in ("Pending", "Running")], (
        "no new pod after Failed"
    )


def test_a_deployment_makes_a_replicaset_and_its_pods_and_the_gc_cascades(emu) -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"tolerations": TOLERATE, "containers": [{"name": "c", "image": "nginx:1.27"}]}}}}  # fmt: skip
    assert call(emu, "POST", "/apis/apps/v1/namespaces/lab/deployments", dep)[0] == 201
    _, rs = call(emu, "GET", "/apis/apps/v1/namespaces/lab/replicasets")
    (r,) = rs["items"]
    h = r["metadata"]["labels"]["pod-template-hash"]
    assert r["metadata"]["name"] == f"web-{h}" and r["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    _, pods = call(emu, "GET", "/api/v1/namespaces/lab/pods?labelSelector=app%3Dweb")
    _, pods = call(emu, "GET", "/api/v1/namespaces/lab/pods")
    names = [p["metadata"]["name"] for p in pods["items"] if p["metadata"]["name"].startswith("web-")]
    assert len(names) == 2 and all(n.startswith(f"web-{h}-") for n in names)
    _, d = call(emu, "GET", "/apis/apps/v1/namespaces/lab/deployments/web")
    assert d["status"]["availableReplicas"] == 2 and d["status"]["observedGeneration"] == 1
    assert (
        call(
            emu, "DELETE", "/apis/apps/v1/namespaces/lab/deployments/web", {"propagationPolicy": "Foreground"}
        )[0]
        == 202
    )
    _, rs = call(emu, "GET", "/apis/apps/v1/namespaces/lab/replicasets")
    _, d = call(emu, "GET", "/apis/apps/v1/namespaces/lab/deployments/web")
    assert rs["items"] == [] and d["reason"] == "NotFound", "foreground: dependents first, then the owner"


def test_orphan_propagation_keeps_the_dependents(emu) -> None:
    call(emu, "POST", "/apis/batch/v1/namespaces/lab/jobs", job("o", {}, duration=3600))
    (p,) = pods_of(emu, "o")
    # batch/v1 Jobs orphan by default: 202, the orphan finalizer does its work, then the Job goes
    assert call(emu, "DELETE", "/apis/batch/v1/namespaces/lab/jobs/o", {})[0] == 202
    assert call(emu, "GET", "/apis/batch/v1/namespaces/lab/jobs/o")[0] == 404
    (kept,) = pods_of(emu, "o")
    assert kept["metadata"]["uid"] == p["metadata"]["uid"] and "ownerReferences" not in kept["metadata"]


def test_every_namespace_gets_its_default_service_account_and_root_ca(emu) -> None:
    call(emu, "POST", "/api/v1/namespaces", {"metadata": {"name": "fresh"}})
    assert call(emu, "GET", "/api/v1/namespaces/fresh/serviceaccounts/default")[0] == 200
    _, cm = call(emu, "GET", "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt")
    assert cm["data"]["ca.crt"] == emu.api.pki.ca_pem.decode()


def _pod(name, scheduler=None, group_label=None):
    spec = {"containers": [{"name": "c", "image": "busybox:1.36"}], "tolerations": TOLERATE}
    if scheduler:
        spec["schedulerName"] = scheduler
    meta = {"name": name}
    if group_label:
        meta["labels"] = {"scheduling.x-k8s.io/pod-group": group_label}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_a_pod_naming_a_scheduler_that_does_not_run_stays_pending_untouched(emu) -> None:
    call(emu, "POST", "/api/v1/namespaces/lab/pods", _pod("ghost", scheduler="my-scheduler"))
    call(
        emu,
        "POST",
        "/api/v1/namespaces/lab/pods",
        _pod("gang-0", scheduler="research-gang-scheduler", group_label="g"),
    )
    advance(emu, 60)
    for name in ("ghost", "gang-0"):
        _, pod = call(emu, "GET", f"/api/v1/namespaces/lab/pods/{name}")
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
        assert not pod["status"].get("conditions"), "no scheduler has looked at it"


def test_the_default_scheduler_binds_gang_labelled_pods_one_by_one(emu) -> None:
    """A PodGroup label means nothing to default-scheduler: each pod is placed on its own (the gang rule is
    Coscheduling's, in the gang scheduler only)."""
    call(emu, "POST", "/api/v1/namespaces/lab/pods", _pod("lone-0", group_label="big"))
    _, pod = call(emu, "GET", "/api/v1/namespaces/lab/pods/lone-0")
    assert pod["spec"].get("nodeName") and pod["status"]["phase"] == "Running"


def test_image_pulls_take_time_and_are_skipped_when_present(emu) -> None:
    with emu.model.lock:
        emu.model.image_pulls = True
        emu.model.record_model_events = True
    call(emu, "POST", "/api/v1/namespaces/lab/pods", _pod("first"))
    _, pod = call(emu, "GET", "/api/v1/namespaces/lab/pods/first")
    assert (
        pod["status"]["phase"] == "Pending"
        and pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    )
    advance(emu, 30)
    _, pod = call(emu, "GET", "/api/v1/namespaces/lab/pods/first")
    assert pod["status"]["phase"] == "Running"
    node = pod["spec"]["nodeName"]
    second = _pod("second")
    second["spec"]["nodeName"] = node
    call(emu, "POST", "/api/v1/namespaces/lab/pods", second)
    _, pod = call(emu, "GET", "/api/v1/namespaces/lab/pods/second")
    assert pod["status"]["phase"] == "Running", "IfNotPresent and on the node: no pull"
    with emu.model.lock:
        messages = [
            e["message"]
            for e in emu.model.store.list("events", "lab")
            if e["involvedObject"]["name"] in ("first", "second")
        ]
    assert any(m.startswith('Successfully pulled image "busybox:1.36" in ') for m in messages)
    assert 'Container image "busybox:1.36" already present on machine' in messages


def test_daemonset_status_counts_its_pods(emu) -> None:
    """kubectl rollout status daemonset reads these (pkg/controller/daemon updateDaemonSetStatus)."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent2"},
          "spec": {"selector": {"matchLabels": {"app": "a2"}}, "template": {"metadata": {"labels": {"app": "a2"}},
                   "spec": {"tolerations": [{"operator": "Exists"}], "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}  # fmt: skip
    assert call(emu, "POST", "/apis/apps/v1/namespaces/lab/daemonsets", ds)[0] == 201
    _, got = call(emu, "GET", "/apis/apps/v1/namespaces/lab/daemonsets/agent2")
    s = got["status"]
    assert (s["desiredNumberScheduled"], s["currentNumberScheduled"], s["numberReady"]) == (2, 2, 2)
