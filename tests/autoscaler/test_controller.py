"""The controller's pass (snapshot -> plan -> act) with the real planner and in-memory fakes, on a fixed clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autoscaler import metrics
from autoscaler.controller import STATE_FAILURES_READ, STATE_GROUPS, Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from clusterspec.names import TO_BE_DELETED_TAINT
from tests.autoscaler.fakes import CPU8, GPU_TAINT, V100, FakeCloud, FakeCluster, group, iso, node, pod
from tests.support import load_yaml

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GPU_LABELS = {"research.cluster/gpu-model": "v100"}


class Clock:
    def __init__(self, t=T0):
        self.t = t

    def now(self):
        return self.t

    def advance(self, seconds):
        self.t += timedelta(seconds=seconds)


def world(pods=(), *, clock, cpu_nodes=1):
    groups = [
        group("c-us-west-2-cpu", "us-west-2", "m6i.2xlarge", max=20, allocatable=CPU8),
        group("c-us-west-2-v100", "us-west-2", "p3.16xlarge", max=4, labels=GPU_LABELS, taints=[GPU_TAINT],
              allocatable=V100),
        group("c-us-east-1-v100", "us-east-1", "p3.16xlarge", max=4, labels=GPU_LABELS, taints=[GPU_TAINT],
              allocatable=V100),
    ]  # fmt: skip
    cloud = FakeCloud(groups, clock=clock)
    nodes = []
    for i in range(cpu_nodes):
        iid = cloud.add_instance("c-us-west-2-cpu", iso(T0 - timedelta(hours=1)))
        cloud.groups["c-us-west-2-cpu"]["desired"] += 1
        nodes.append(node(f"cpu-{i}", cloud.groups["c-us-west-2-cpu"], iid, created=T0 - timedelta(hours=1)))
    return FakeCluster(pods=pods, nodes=nodes), cloud


def sample(name, **labels):
    return metrics.REGISTRY.get_sample_value(name, labels)


def controller(cluster, cloud, clock, **kw):
    cfg = ControllerConfig(
        planner=PlannerConfig(idle_threshold_s=600), regions=["us-west-2", "us-east-1"], **kw
    )
    return Controller(cluster, cloud, cfg, clock)


def gpu_pods(n, gpus=8):
    return [
        pod(f"train-{i}", cpu="8", memory="64Gi", gpus=gpus, selector=GPU_LABELS, owner="Job")
        for i in range(n)
    ]


def test_pending_gpu_pods_scale_the_first_region_and_explain_it():
    clock = Clock()
    cluster, cloud = world(gpu_pods(3), clock=clock)
    result = controller(cluster, cloud, clock).run_once()
    assert result.errors == []
    assert result.plan["scale_up"] == {"c-us-west-2-v100": 3}
    assert ("set_desired", "c-us-west-2-v100", 3) in cloud.changes
    assert {e[1] for e in cluster.events} == {"TriggeredScaleUp"} and len(cluster.events) == 3
    assert (
        cluster.state[STATE_FAILURES_READ] == "2026-03-02T09:00:00Z"
    )  # the injected clock, not the system's
    assert json.loads(cluster.status["summary"])["scale_up"] == {"c-us-west-2-v100": 3}
    assert json.loads(cluster.status["summary"])["pending_pods"] == 3
    assert json.loads(cluster.status["group.c-us-west-2-v100"]) == {
        "region": "us-west-2", "instance_type": "p3.16xlarge", "min": 0, "max": 4, "desired": 3, "instances": 0,
        "nodes": 0, "scale_up": 3, "health": "ok"}  # fmt: skip
    assert json.loads(cluster.status["group.c-us-west-2-cpu"])["nodes"] == 1
    assert result.pending_pods == 3


def test_later_passes_request_nothing_twice_and_repeat_no_event():
    clock = Clock()
    cluster, cloud = world(gpu_pods(3), clock=clock)
    ctl = controller(cluster, cloud, clock)
    ctl.run_once()
    for _ in range(3):
        clock.advance(10)
        assert ctl.run_once().plan["scale_up"] == {}
    assert [c for c in cloud.changes if c[0] == "set_desired"] == [("set_desired", "c-us-west-2-v100", 3)]
    # one event when the scale-up was requested, one when the pods wait for the launching nodes
    assert sorted(e[2].split(":")[0] for e in cluster.events if e[0] == "research/train-0") == [
        "pod triggered scale-up",
        "pod waits for a node of group c-us-west-2-v100 that is already launching",
    ]
    assert len(cluster.events) == 6


def test_dry_run_changes_nothing_and_lists_what_it_would_do():
    clock = Clock()
    cluster, cloud = world(gpu_pods(2) + [pod("huge", gpus=16, selector=GPU_LABELS)], clock=clock)
    result = controller(cluster, cloud, clock, dry_run=True).run_once()
    assert cluster.changes == [] and cloud.changes == []
    assert {
        "action": "set_desired",
        "group": "c-us-west-2-v100",
        "from": 0,
        "desired": 2,
        "dry_run": True,
    } in (result.actions)
    assert [u["pod"] for u in result.plan["unschedulable"]] == ["research/huge"]


def test_an_unschedulable_pod_gets_a_warning_event_with_the_reason():
    clock = Clock()
    cluster, cloud = world([pod("huge", gpus=16, selector=GPU_LABELS)], clock=clock)
    controller(cluster, cloud, clock).run_once()
    [(key, reason, message, kind)] = cluster.events
    assert (key, reason, kind) == ("research/huge", "NotTriggerScaleUp", "Warning")
    assert "16 nvidia.com/gpu" in message


def test_pod_events_are_capped_per_pass_and_the_rest_follow_in_later_passes():
    clock = Clock()
    cluster, cloud = world([pod(f"huge-{i}", gpus=16, selector=GPU_LABELS) for i in range(5)], clock=clock)
    ctl = controller(cluster, cloud, clock, max_events_per_loop=2)
    written = []
    for _ in range(4):
        ctl.run_once()
        written.append(len(cluster.events))
        clock.advance(10)
    assert written == [2, 4, 5, 5]
    assert sorted(e[0] for e in cluster.events) == [f"research/huge-{i}" for i in range(5)]


def idle_gpu_world(clock):
    cluster, cloud = world(clock=clock, cpu_nodes=0)
    g = cloud.groups["c-us-west-2-v100"]
    iid = cloud.add_instance(g["name"], iso(T0 - timedelta(hours=2)))
    g["desired"] = 1
    cluster.nodes["gpu-0"] = node("gpu-0", g, iid, created=T0 - timedelta(hours=2))
    return cluster, cloud, iid


def test_an_idle_node_is_tainted_then_terminated_and_deleted():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    ctl = controller(cluster, cloud, clock)
    first = ctl.run_once()
    assert [s["action"] for s in first.plan["scale_down"]] == [], "idle time starts when first seen"
    clock.advance(601)
    second = ctl.run_once()
    assert [(s["node"], s["action"]) for s in second.plan["scale_down"]] == [("gpu-0", "taint")]
    assert any(t["key"] == TO_BE_DELETED_TAINT for t in cluster.nodes["gpu-0"]["spec"]["taints"])
    assert sample("autoscaler_nodes", group="c-us-west-2-v100", state="draining") == 1
    clock.advance(10)
    ctl.run_once()
    assert ("terminate", "c-us-west-2-v100", iid) in cloud.changes
    assert "gpu-0" not in cluster.nodes and cloud.groups["c-us-west-2-v100"]["desired"] == 0


def test_a_restart_between_taint_and_terminate_finishes_the_removal():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    controller(cluster, cloud, clock).run_once()
    clock.advance(601)
    controller(cluster, cloud, clock).run_once()  # taints, then the process dies
    assert ("taint", "gpu-0") in cluster.changes
    clock.advance(30)
    fresh = controller(cluster, cloud, clock)  # a new process: nothing in memory
    fresh.run_once()
    assert ("terminate", "c-us-west-2-v100", iid) in cloud.changes and "gpu-0" not in cluster.nodes


def test_a_restart_between_taint_and_terminate_reuses_the_node_for_a_new_pod():
    clock = Clock()
    cluster, cloud, _ = idle_gpu_world(clock)
    controller(cluster, cloud, clock).run_once()
    clock.advance(601)
    controller(cluster, cloud, clock).run_once()
    cluster.pods["research/late"] = pod(
        "late", cpu="8", memory="64Gi", gpus=8, selector=GPU_LABELS, owner="Job"
    )
    clock.advance(30)
    result = controller(cluster, cloud, clock).run_once()
    assert [(s["node"], s["action"]) for s in result.plan["scale_down"]] == [("gpu-0", "untaint")]
    assert not any(t["key"] == TO_BE_DELETED_TAINT for t in cluster.nodes["gpu-0"]["spec"]["taints"])
    assert not [c for c in cloud.changes if c[0] == "terminate"] and result.plan["scale_up"] == {}


def test_a_restart_between_terminate_and_node_deletion_deletes_the_node():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    controller(cluster, cloud, clock).run_once()
    clock.advance(601)
    controller(cluster, cloud, clock).run_once()
    cloud.terminate_instance("c-us-west-2-v100", iid)  # the dying process got this far
    clock.advance(30)
    result = controller(cluster, cloud, clock).run_once()
    assert "gpu-0" not in cluster.nodes
    assert {
        "action": "delete_node",
        "node": "gpu-0",
        "reason": "instance already terminated",
        "ok": True,
    } in (result.actions)


def test_failed_calls_are_counted_and_the_pass_goes_on():
    clock = Clock()
    cluster, cloud = world(gpu_pods(2) + [pod("web", cpu="6", memory="8Gi")], cpu_nodes=0, clock=clock)
    cloud.fail["set_desired"] = [RuntimeError("HTTP 500 InternalFailure")]
    cluster.fail["record_event"] = [RuntimeError("HTTP 500")]
    result = controller(cluster, cloud, clock).run_once()
    failed = [a for a in result.actions if a.get("ok") is False]
    assert len(failed) == 1 and "InternalFailure" in failed[0]["error"]
    assert len([c for c in cloud.changes if c[0] == "set_desired"]) == 1  # the other group still scaled
    assert any("HTTP 500" in e for e in result.errors)
    assert cluster.state, "state is still written"


def test_a_failed_list_fails_only_that_pass():
    clock = Clock()
    cluster, cloud = world(gpu_pods(1), clock=clock)
    cluster.fail["list_pods"] = [RuntimeError("HTTP 503")]
    ctl = controller(cluster, cloud, clock)
    first = ctl.run_once()
    assert first.plan is None and "list pods: HTTP 503" in first.errors
    clock.advance(10)
    assert ctl.run_once().plan["scale_up"] == {"c-us-west-2-v100": 1}


def test_a_malformed_pod_is_left_out_and_the_rest_is_planned():
    bad = pod("bad", cpu="lots")
    clock = Clock()
    cluster, cloud = world([bad, *gpu_pods(1)], clock=clock)
    result = controller(cluster, cloud, clock).run_once()
    assert result.plan["scale_up"] == {"c-us-west-2-v100": 1}
    assert any("bad" in e for e in result.errors)


def test_a_replica_that_is_not_the_leader_changes_nothing():
    clock = Clock()
    cluster, cloud = world(gpu_pods(1), clock=clock)
    ctl = Controller(cluster, cloud, ControllerConfig(regions=["us-west-2"]), clock, may_act=lambda: False)
    result = ctl.run_once()
    assert cluster.changes == [] and cloud.changes == []
    assert any("not the leader" in e for e in result.errors)


@pytest.mark.parametrize("clock", [T0.timestamp(), T0.replace(tzinfo=None)])
def test_the_clock_may_give_epoch_seconds_or_a_naive_utc_datetime(clock):
    cluster, cloud = world(clock=Clock())
    ctl = Controller(cluster, cloud, PlannerConfig(), lambda: clock)
    assert ctl.now() == T0


def test_capacity_failure_spills_over_and_its_state_survives_a_restart():
    clock = Clock()
    cluster, cloud = world(gpu_pods(2), clock=clock, cpu_nodes=0)
    cloud.launch = False  # the instances never come
    controller(cluster, cloud, clock).run_once()
    assert cloud.groups["c-us-west-2-v100"]["desired"] == 2
    cloud.failures.append({"group": "c-us-west-2-v100", "reason": "insufficient-capacity", "missing": 2,
                           "message": "We currently do not have sufficient p3.16xlarge capacity",
                           "at": iso(T0 + timedelta(seconds=5))})  # fmt: skip
    clock.advance(10)
    controller(cluster, cloud, clock).run_once()
    assert cloud.groups["c-us-west-2-v100"]["desired"] == 0
    assert cloud.groups["c-us-east-1-v100"]["desired"] == 2
    assert sample("autoscaler_group_backoff", group="c-us-west-2-v100") == 1
    status = json.loads(cluster.status["group.c-us-west-2-v100"])
    assert status["health"] == "backed-off" and status["failure_state"]["failures"] == 1
    assert sample("autoscaler_group_backoff", group="c-us-east-1-v100") is None
    saved = json.loads(cluster.state[STATE_GROUPS])["c-us-west-2-v100"]
    assert saved["failures"] == 1 and saved["last_failure"]["reason"] == "insufficient-capacity"
    clock.advance(10)
    cluster.state[STATE_FAILURES_READ] = iso(T0)  # a restart that reads the same failure again
    controller(cluster, cloud, clock).run_once()
    assert json.loads(cluster.state[STATE_GROUPS])["c-us-west-2-v100"]["failures"] == 1, "counted once"
    assert cloud.groups["c-us-west-2-v100"]["desired"] == 0


STEPS = load_yaml(Path(__file__).parent / "scale_down_steps.yaml")


@pytest.mark.parametrize("case", STEPS, ids=[c["name"] for c in STEPS])
def test_scale_down_steps(case):
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    node_obj = cluster.nodes["gpu-0"]
    if case["node"] == "draining":
        node_obj["spec"]["taints"].append({"key": TO_BE_DELETED_TAINT, "value": "1", "effect": "NoSchedule"})
    elif case["node"] == "dead":
        node_obj["status"]["conditions"][0]["status"] = "False"
    cached = {"pods": cluster.list_pods(), "nodes": cluster.list_nodes(), "groups": cloud.list_groups()}
    if case["node"] == "absent":
        cached["nodes"] = [n for n in cached["nodes"] if n["metadata"]["name"] != "gpu-0"]
        if case.get("fresh") != "registered":
            del cluster.nodes["gpu-0"]
    for p in case["pods"]:  # on the node by a fresh read; the cached snapshot does not show them
        obj = pod(p["name"], node="gpu-0", owner=p["owner"], phase=p.get("phase"))
        if p.get("mirror"):
            obj["metadata"]["annotations"]["kubernetes.io/config.mirror"] = "x"
        if p.get(
            "deleting"
        ):  # evicted by the taint manager; stays Terminating while its kubelet is unreachable
            obj["metadata"]["deletionTimestamp"] = iso(T0)
        cluster.pods[f"research/{p['name']}"] = obj
    if case.get("fresh") == "untainted":
        node_obj["spec"]["taints"] = []
    elif case.get("fresh") == "ready":
        node_obj["status"]["conditions"][0]["status"] = "True"
    elif case.get("fresh") == "unreadable":
        cluster.fail["read_node"] = [RuntimeError("HTTP 503")]
    step = {"node": None if case["node"] == "absent" else "gpu-0", "group": "c-us-west-2-v100",
            "instance_id": iid, "action": "terminate", "reason": "test"}  # fmt: skip
    cloud.changes = cluster.changes  # one sequence of changes across both sides
    result = controller(cluster, cloud, clock).execute({"scale_down": [step]}, cached)
    done = [c[0] for c in cluster.changes if c[0] in ("evict", "untaint", "terminate", "delete_node")]
    assert done == case["done"]
    if "error" in case:
        assert any(case["error"] in e for e in result.errors), result.errors
    else:
        assert result.errors == []


class StorageCluster(FakeCluster):
    """A cluster that lists claims, volumes and classes, as the Kubernetes adapter does."""

    def __init__(self, claims, **kw):
        super().__init__(**kw)
        self.claims, self.volumes = claims, []

    def list_storage(self):
        classes = [
            {"metadata": {"name": "efs"}, "provisioner": "efs.csi.aws.com", "volumeBindingMode": "Immediate"}
        ]
        return {
            "persistentvolumeclaims": self.claims,
            "persistentvolumes": self.volumes,
            "storageclasses": classes,
        }


def test_the_pass_snapshot_carries_the_claims_and_a_pod_waiting_on_one_gets_no_node():
    """Issue 33: a gang whose claims are not bound yet would have bought nodes kube-scheduler never uses."""
    clock = Clock()
    _, cloud = world(clock=clock)
    pods = gpu_pods(2)
    for p in pods:
        p["spec"]["volumes"] = [{"name": "home", "persistentVolumeClaim": {"claimName": "home"}}]
    claim = {"metadata": {"name": "home", "namespace": "research"}, "spec": {"storageClassName": "efs"},
             "status": {"phase": "Pending"}}  # fmt: skip
    cluster = StorageCluster([claim], pods=pods)
    ctl = controller(cluster, cloud, clock)
    snapshot = ctl.snapshot()  # what `autoscaler snapshot` writes
    assert (
        snapshot["persistentvolumeclaims"] == [claim]
        and snapshot["storageclasses"][0]["metadata"]["name"] == "efs"
    )
    result = ctl.run_once()
    assert result.plan["scale_up"] == {} and [c for c in cloud.changes if c[0] == "set_desired"] == []
    assert {(e[0], e[2]) for e in cluster.events} == {
        (
            f"research/train-{i}",
            "pod didn't trigger scale-up: pod has unbound immediate PersistentVolumeClaims",
        )
        for i in range(2)
    }
    claim.update(metadata={**claim["metadata"], "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                 spec={"storageClassName": "efs", "volumeName": "efs-home"}, status={"phase": "Bound"})  # fmt: skip
    clock.advance(10)
    assert ctl.run_once().plan["unschedulable"][0]["reason"] == (
        "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)")  # fmt: skip
    cluster.volumes.append({"metadata": {"name": "efs-home"}, "spec": {"storageClassName": "efs"},
                            "status": {"phase": "Bound"}})  # fmt: skip
    clock.advance(10)
    assert ctl.run_once().plan["scale_up"] == {"c-us-west-2-v100": 2}


def test_a_pass_times_its_phases_in_the_metric_and_its_result():
    clock = Clock()
    cluster, cloud = world(gpu_pods(3), clock=clock)
    before = sample("autoscaler_pass_phase_seconds_count", phase="scale_up") or 0
    result = controller(cluster, cloud, clock).run_once()
    assert set(result.phase_s) >= {"state", "cluster", "aws", "plan", "scale_up", "act", "persist", "observe"}
    assert all(v >= 0 for v in result.phase_s.values())
    assert sample("autoscaler_pass_phase_seconds_count", phase="scale_up") == before + 1


def test_the_state_is_trusted_after_our_own_write_and_written_when_more_than_its_watermark_changes():
    """After its own write a pass reads no state (one writer, the leader); a pass that changes nothing but the
    failures watermark writes no state for 30 s, and none of the status but its time for 10 s."""
    clock = Clock()
    cluster, cloud = world(gpu_pods(3), clock=clock)
    ctl = controller(cluster, cloud, clock)

    def calls():
        out = [c[0] for c in cluster.changes if c[0] in ("write_state", "write_status")]
        out = ["read_state"] * getattr(cluster, "state_reads", 0) + out
        cluster.changes.clear()
        cluster.state_reads = 0
        return out

    ctl.run_once()
    assert calls() == ["read_state", "write_state", "write_status"]
    clock.advance(2)
    ctl.run_once()
    assert calls() == ["write_status"]  # the scale-up is done: the status says so at once
    clock.advance(3)
    ctl.run_once()
    assert calls() == []  # the pods wait for the launching nodes: the same status but its time
    watermark = cluster.state[STATE_FAILURES_READ]
    clock.advance(8)
    ctl.run_once()
    assert calls() == ["write_status"]  # 11 s after the last status write
    clock.advance(20)
    ctl.run_once()
    assert calls() == [
        "write_state",
        "write_status",
    ]  # 31 s after the last state write: the watermark moves on
    assert cluster.state[STATE_FAILURES_READ] > watermark
    cluster.pods = {}  # the pods vanish: the summary changes and is written at once
    clock.advance(1)
    ctl.run_once()
    assert "write_status" in calls()
    assert json.loads(cluster.status["summary"])["pending_pods"] == 0


def test_a_failed_state_write_makes_the_next_pass_read_the_state_again():
    clock = Clock()
    cluster, cloud = world(gpu_pods(1), clock=clock)
    ctl = controller(cluster, cloud, clock)
    cluster.fail["write_state"] = [RuntimeError("conflict")]
    ctl.run_once()
    cluster.changes.clear()
    cluster.state_reads = 0
    clock.advance(1)
    ctl.run_once()
    assert cluster.state_reads == 1 and ("write_state",) in cluster.changes


def test_a_replica_that_stood_by_reads_the_state_again():
    """While another replica may have held the Lease, the state ConfigMap may have moved on: the first pass after
    standing by reads it instead of trusting its memory."""
    clock = Clock()
    cluster, cloud = world(gpu_pods(1), clock=clock)
    ctl = controller(cluster, cloud, clock)
    ctl.run_once()
    cluster.state_reads = 0
    clock.advance(1)
    ctl.run_once()
    assert cluster.state_reads == 0
    ctl.standing_by()
    clock.advance(1)
    ctl.run_once()
    assert cluster.state_reads == 1
