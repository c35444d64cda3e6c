"""Drift through the controller (docs/planner.md, "Drift"): a busy drifted node gets the soft taint and keeps its
pod; an empty one is tainted, re-checked and terminated; at the group's minimum a new instance replaces it; past
the deadline the pod holding an old node gets a Warning Event and the metric counts it overdue."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from autoscaler import metrics
from autoscaler.controller import Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from clusterspec.names import DRIFTED_TAINT, TO_BE_DELETED_TAINT
from tests.autoscaler.fakes import CPU8, FakeCloud, FakeCluster, group, iso, node, pod

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
G = "c-us-west-2-cpu"


class Clock:
    def __init__(self):
        self.t = T0

    def now(self):
        return self.t


def _world():
    clock = Clock()
    cloud = FakeCloud([group(G, "us-west-2", "m6i.2xlarge", min=2, max=10, allocatable=CPU8)], clock=clock)
    g = cloud.groups[G]
    g["launch_template"] = {"version": "7", "image": "ami-new"}
    nodes = []
    for i in range(2):
        iid = cloud.add_instance(G, iso(T0 - timedelta(hours=1)))
        g["instances"][-1]["launch_template"] = {"version": "6", "image": "ami-old"}
        g["desired"] += 1
        nodes.append(node(f"old-{i}", g, iid, created=T0 - timedelta(hours=1)))
    busy = pod("train-0", cpu="6", node="old-1", owner="Job")
    cluster = FakeCluster(pods=[busy], nodes=nodes)
    cfg = ControllerConfig(
        planner=PlannerConfig(idle_threshold_s=600, drift_deadline_s=3600), regions=["us-west-2"]
    )
    return clock, cloud, cluster, Controller(cluster, cloud, cfg, clock)


def _taints(cluster, name):
    return {t["key"]: t for t in cluster.nodes[name]["spec"].get("taints", [])}


def test_drifted_nodes_are_replaced_once_empty_and_never_drained():
    clock, cloud, cluster, ctl = _world()
    ctl.run_once()
    assert TO_BE_DELETED_TAINT in _taints(cluster, "old-0"), "the empty old node goes at once"
    soft = _taints(cluster, "old-1")[DRIFTED_TAINT]
    assert soft == {"key": DRIFTED_TAINT, "value": "7", "effect": "PreferNoSchedule"}
    assert TO_BE_DELETED_TAINT not in _taints(cluster, "old-1")
    assert "research.cluster/drifted-since" in cluster.nodes["old-1"]["metadata"]["annotations"]

    clock.t += timedelta(seconds=10)
    ctl.run_once()
    g = cloud.groups[G]
    assert "old-0" not in cluster.nodes, "terminated on the re-check"
    assert len(g["instances"]) == 2 and g["desired"] == 2, "the minimum was refilled with a new instance"
    assert "research/train-0" in cluster.pods
    assert not any(c[0] == "evict" for c in cluster.changes)

    clock.t += timedelta(hours=1)
    ctl.run_once()
    warnings = [e for e in cluster.events if e[1] == "NodeDriftOverdue"]
    assert warnings and warnings[0][0].endswith("/train-0") and warnings[0][3] == "Warning"
    assert "node old-1 is drifted" in warnings[0][2]
    assert metrics.REGISTRY.get_sample_value("autoscaler_drifted_nodes", {"group": G, "overdue": "true"}) == 1
    assert (
        metrics.REGISTRY.get_sample_value("autoscaler_drifted_nodes", {"group": G, "overdue": "false"})
        is None
    )
    assert "old-1" in cluster.nodes and TO_BE_DELETED_TAINT not in _taints(cluster, "old-1")
