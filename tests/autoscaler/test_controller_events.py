"""Events off the decision path: the controller hands Events to the cluster adapter's Event writer and never waits
for them. Ordering is measured with gates and recorded calls, never with wall times."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

from autoscaler.adapters.events import EventWriter
from autoscaler.adapters.kubernetes import COMPONENT, STATUS_CONFIGMAP, KubeCluster, KubeEventSink, api_client
from autoscaler.controller import Controller, ControllerConfig
from tests.autoscaler import real_kube
from tests.autoscaler.fakes import V100 as V100_ALLOCATABLE
from tests.autoscaler.fakes import FakeCloud, FakeCluster, group, pod

V100 = {"research.cluster/gpu-model": "v100"}
GROUP = "dlr-us-west-2-gpu-v100x8"
TAINTS = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


class Clock:
    def __init__(self):
        self.t = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self):
        return self.t


def v100_group(max_size: int = 100) -> dict:
    return group(GROUP, "us-west-2", "p3.16xlarge", max=max_size, labels=V100, taints=TAINTS,
                 allocatable=V100_ALLOCATABLE)  # fmt: skip


def in_thread(fn, timeout_s: float = 60.0):
    """Run ``fn`` in a thread; its result, or AssertionError when it did not return (it waited on a gate)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), "the pass waited on Event writes"
    return out[0]


def test_a_pass_with_500_pod_events_scales_before_any_event_is_written(tmp_path, kube):
    """The real Kubernetes adapter on the run's shared real control plane (through the fault proxy), 500 pending
    pods: every Event write is held at the proxy (a gate) until the pass has returned. The pass made its scaling
    call and finished with no Event written; once the API answers, the writer writes them all: 500
    TriggeredScaleUp on the pods, one ScaledUpGroup on the status ConfigMap."""
    ns = kube.namespace("events")
    real_kube.create(kube, *(real_kube.pod(f"train-{i}", ns, gpus=1, selector=V100) for i in range(500)))
    order: list[str] = []
    gate = threading.Event()

    def hold(method, path, query, body):
        if "events" in path.split("/") and method in ("POST", "PATCH"):
            gate.wait()  # a slow API: no Event write reaches kube-apiserver until the gate opens
        return None

    def written(method, path, query):
        if "events" in path.split("/") and method in ("POST", "PATCH"):
            order.append("event written")

    with real_kube.proxied(kube, tmp_path, ns) as (kubeconfig, faults):
        faults.intercept.append(hold)
        faults.hooks.append(written)
        api = api_client(str(kubeconfig))
        kube_cluster = real_kube.scope(KubeCluster(api, namespace=ns), ns)
        sink = KubeEventSink(api_client(str(kubeconfig)), 300.0)  # its own pool, as in production
        kube_cluster.events = EventWriter(sink, component=COMPONENT, qps=None)  # no rate limit: all 500 go
        kube_cluster.sync()
        assert len(kube_cluster.list_pods()) == 500
        cloud = FakeCloud([v100_group()], clock=Clock())
        real_set = cloud.set_desired

        def set_desired(group_name, desired):
            order.append("scaling call")
            real_set(group_name, desired)

        cloud.set_desired = set_desired
        ctl = Controller(kube_cluster, cloud, ControllerConfig(regions=["us-west-2"]), cloud.clock)
        try:
            result = in_thread(ctl.run_once)
            assert order == ["scaling call"], "the pass scaled and ended while every Event write was held"
            assert result.events_written == 500 and not result.errors
            assert kube_cluster.events.pending() == 501, "500 pod Events and one group Event, queued"
        finally:
            gate.set()
        assert kube_cluster.flush_events(120)
        assert kube_cluster.close_events(5) == 0
        sink.close()
        api.close()
    events = json.loads(kube.kubectl("-n", ns, "get", "events", "-o", "json", check=True).stdout)["items"]
    ours = [e for e in events if (e.get("source") or {}).get("component") == COMPONENT]
    assert order[0] == "scaling call" and order.count("event written") == 501
    reasons = sorted({(e["reason"], e["involvedObject"]["kind"]) for e in ours})
    assert reasons == [("ScaledUpGroup", "ConfigMap"), ("TriggeredScaleUp", "Pod")]
    assert len({e["involvedObject"]["name"] for e in ours if e["reason"] == "TriggeredScaleUp"}) == 500
    [up] = [e for e in ours if e["reason"] == "ScaledUpGroup"]
    desired = cloud.groups[GROUP]["desired"]
    assert up["message"] == f"Scale-up: setting group {GROUP} size to {desired} instead of 0 (max: 100)"
    assert up["involvedObject"]["name"] == STATUS_CONFIGMAP
    assert kube_cluster.events.dropped == {}
    kube.kubectl("delete", "namespace", ns, "--wait=false")  # 500 pending pods: the scheduler retries them


class EventCluster(FakeCluster):
    """A cluster adapter with group Events (as KubeCluster.record_status_event)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.status_events: list[tuple[str, str, str]] = []

    def record_status_event(self, reason, message, type="Normal"):  # noqa: A002
        self.status_events.append((reason, message, type))


def gpu_pods(n: int) -> list[dict]:
    return [pod(f"train-{i}", cpu="8", memory="64Gi", gpus=8, selector=V100, owner="Job") for i in range(n)]


def test_one_group_event_per_scale_up_and_per_failed_scale_up():
    """cluster-autoscaler's executor (core/scaleup/orchestrator/executor.go): ScaledUpGroup "Scale-up: setting
    group G size to N instead of C (max: M)", and FailedToScaleUpGroup (Warning) "Scale-up failed for group G: E"
    when the cloud refuses."""
    clock = Clock()
    cluster, cloud = EventCluster(gpu_pods(2)), FakeCloud([v100_group(4)], clock=clock)
    Controller(cluster, cloud, ControllerConfig(regions=["us-west-2"]), clock).run_once()
    assert cluster.status_events == [
        ("ScaledUpGroup", f"Scale-up: setting group {GROUP} size to 2 instead of 0 (max: 4)", "Normal")
    ]
    assert len(cluster.events) == 2, "and one TriggeredScaleUp per pod"

    cluster, cloud = EventCluster(gpu_pods(1)), FakeCloud([v100_group(4)], clock=clock)
    cloud.fail["set_desired"] = [RuntimeError("HTTP 500 InternalFailure")]
    Controller(cluster, cloud, ControllerConfig(regions=["us-west-2"]), clock).run_once()
    assert cluster.status_events == [
        ("FailedToScaleUpGroup", f"Scale-up failed for group {GROUP}: HTTP 500 InternalFailure", "Warning")
    ]


def test_a_dry_run_records_no_event():
    clock = Clock()
    cluster, cloud = EventCluster(gpu_pods(2)), FakeCloud([v100_group(4)], clock=clock)
    config = ControllerConfig(regions=["us-west-2"], dry_run=True)
    result = Controller(cluster, cloud, config, clock).run_once()
    assert result.plan["events"] and cluster.events == [] and cluster.status_events == []


def test_an_event_the_writer_dropped_is_offered_again_next_pass():
    """record_event returning False (the writer's queue was full) does not mark the Event sent, so the repeat
    suppression (EVENT_REPEAT_S) does not hide it: the next pass offers it again."""
    clock = Clock()
    cluster, cloud = EventCluster(gpu_pods(1)), FakeCloud([v100_group(4)], clock=clock, launch=False)
    answers = [True, False, True]  # the second pass's Event is dropped
    offered = []

    def record_event(p, reason, message, type="Normal"):  # noqa: A002
        offered.append(message)
        return answers.pop(0)

    cluster.record_event = record_event
    ctl = Controller(cluster, cloud, ControllerConfig(regions=["us-west-2"]), clock)
    for _ in range(4):
        ctl.run_once()
    waits = f"pod waits for a node of group {GROUP} that is already launching"
    assert offered[1:] == [waits, waits], "offered again after the drop, then suppressed as sent"


def test_the_memory_of_events_sent_forgets_pods_that_are_gone():
    """The repeat suppression remembers each (pod, reason) it sent; once the pods are gone (more than four entries
    per pod left), it keeps only those of pods that are still there, so it cannot grow with churn."""
    clock = Clock()
    cluster, cloud = EventCluster(gpu_pods(10)), FakeCloud([v100_group(100)], clock=clock, launch=False)
    ctl = Controller(cluster, cloud, ControllerConfig(regions=["us-west-2"]), clock)
    ctl.run_once()
    assert {pod for pod, _ in ctl._events_sent} == {f"research/train-{i}" for i in range(10)}
    for i in range(1, 10):
        del cluster.pods[f"research/train-{i}"]
    ctl.run_once()
    assert {pod for pod, _ in ctl._events_sent} == {"research/train-0"}
