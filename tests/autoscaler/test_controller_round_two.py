"""Issue 28 on the controller, with the real planner and in-memory fakes on a fixed clock: the read-to-terminate
window, aborted removals, vanished and young pods, phantom capacity, late writes and AWS eventual consistency.
(The same behaviours against the real process, moto and the real control plane: tests/faults/test_round_two.py.)"""

from __future__ import annotations

import copy
import json
from datetime import timedelta

from autoscaler import metrics
from autoscaler.controller import STATE_REMOVING, Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from clusterspec.names import (
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    POD_SCALE_UP_DELAY_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    TO_BE_DELETED_TAINT,
)
from tests.autoscaler.fakes import FakeCloud, FakeCluster, iso, pod
from tests.autoscaler.test_controller import GPU_LABELS, T0, Clock, gpu_pods, idle_gpu_world, world

WEST, EAST = "c-us-west-2-v100", "c-us-east-1-v100"


def sample(name, **labels):
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def ctl(cluster, cloud, clock, **kw):
    planner = kw.pop("planner", PlannerConfig(idle_threshold_s=600, boot_timeout_s=300))
    cfg = ControllerConfig(planner=planner, regions=["us-west-2", "us-east-1"], **kw)
    return Controller(cluster, cloud, cfg, clock)


class LiveCluster(FakeCluster):
    """The live adapter's extra capabilities: taint and cordon in one write, the pods watch's events since a mark,
    Node deletion with preconditions, Events on Nodes, a fresh read of the pending pods."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seq = 0
        self.seen: list[tuple[int, str, dict]] = []
        self.node_events: list[tuple[str, str, str]] = []
        self.after_pod_reads: list = []  # callables run after each read of a node's pods (a racing binder)
        self.pending_read = None  # what read_pending_pods answers (None: the truth)
        self.pending_reads: list = []  # the keys each read asked for

    def mark_for_removal(self, name, taint):
        self.taint_node(name, taint)
        n = self.nodes[name]
        if not n["spec"].get("unschedulable"):
            n["spec"]["unschedulable"] = True
            n["metadata"].setdefault("annotations", {})[CORDONED_BY_AUTOSCALER_ANNOTATION] = "true"

    def unmark(self, name, keys, annotations=None):
        for key in keys:
            self.untaint_node(name, key)
        n = self.nodes[name]
        if n["metadata"].get("annotations", {}).pop(CORDONED_BY_AUTOSCALER_ANNOTATION, None):
            n["spec"]["unschedulable"] = False
        if annotations:
            self.annotate_node(name, annotations)

    def read_pods_on_node(self, name):
        pods = super().read_pods_on_node(name)
        for fn in self.after_pod_reads:
            fn(name)
        return pods

    def bind(self, p):
        self.pods[f"{p['metadata']['namespace']}/{p['metadata']['name']}"] = p
        self.seq += 1
        self.seen.append((self.seq, p["spec"]["nodeName"], p))

    def pod_event_mark(self):
        return self.seq

    def pods_seen_on(self, node, mark):
        return [p for s, n, p in self.seen if s > mark and n == node]

    def delete_node(self, name, uid=None, resource_version=None):
        self.changes.append(("delete_preconditions", name, resource_version))
        super().delete_node(name)

    def record_node_event(self, node, reason, message, type="Normal"):  # noqa: A002
        self.node_events.append((node["metadata"]["name"], reason, message))

    def read_pending_pods(self, keys=None):
        self.pending_reads.append(keys)
        pods = self.pending_read if self.pending_read is not None else self.list_pods()
        out = [p for p in copy.deepcopy(pods) if not p["spec"].get("nodeName")]
        if keys is not None:  # the adapter reads those by name: only they come back
            out = [p for p in out if f"{p['metadata']['namespace']}/{p['metadata']['name']}" in keys]
        return out


def draining_world(clock, tainted_ago_s=30):
    """An idle GPU node tainted and cordoned by us ``tainted_ago_s`` ago, due for termination."""
    cluster, cloud, iid = idle_gpu_world(clock)
    live = LiveCluster(pods=cluster.pods.values(), nodes=cluster.nodes.values())
    n = live.nodes["gpu-0"]
    at = T0 - timedelta(seconds=tainted_ago_s)
    n["spec"]["taints"].append(
        {"key": TO_BE_DELETED_TAINT, "value": str(int(at.timestamp())), "effect": "NoSchedule"}
    )
    n["spec"]["unschedulable"] = True
    n["metadata"]["annotations"].update({
        CORDONED_BY_AUTOSCALER_ANNOTATION: "true",
        "research.cluster/to-be-deleted-since": iso(at),
        "research.cluster/idle-since": iso(T0 - timedelta(hours=1)),
    })  # fmt: skip
    return live, cloud, iid


def job(name, node):
    return pod(name, node=node, owner="Job")


# -- the read-to-terminate window -------------------------------------------------------------------------------------
def test_an_empty_node_is_deleted_before_its_instance_is_terminated():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    cloud.changes = cluster.changes
    ctl(cluster, cloud, clock, delete_delay_after_taint_s=10).run_once()
    done = [c[0] for c in cluster.changes if c[0] in ("delete_preconditions", "delete_node", "terminate")]
    assert done == ["delete_preconditions", "delete_node", "terminate"]
    assert cloud.groups[WEST]["desired"] == 0


def test_a_pod_bound_right_after_the_fresh_read_is_found_by_the_last_read():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    cluster.after_pod_reads.append(
        lambda name: (
            cluster.after_pod_reads.clear() or cluster.pods.update({"research/late": job("late", name)})
        )
    )  # fmt: skip  (a binder that ignores the taint and the cordon)
    result = ctl(cluster, cloud, clock, delete_delay_after_taint_s=10).run_once()
    assert not [c for c in cloud.changes if c[0] == "terminate"] and "gpu-0" in cluster.nodes
    assert any(
        "the last read before deleting its Node finds pods on it (research/late)" in e for e in result.errors
    )
    n = cluster.nodes["gpu-0"]
    assert not n["spec"]["taints"] or all(t["key"] != TO_BE_DELETED_TAINT for t in n["spec"]["taints"])
    assert n["spec"]["unschedulable"] is False, "our cordon is lifted with the taint"
    assert n["metadata"]["annotations"][SCALE_DOWN_ABORTED_ANNOTATION] == f"{iso(T0)}; pod research/late"
    assert [(e[0], e[1]) for e in cluster.node_events] == [("gpu-0", "ScaleDownAborted")]


def test_a_pod_the_watch_showed_bound_since_the_fresh_read_calls_the_removal_off():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)

    def binder(
        name,
    ):  # bound after the first read; the watch delivers it; the last read is (made) blind to it
        cluster.after_pod_reads.clear()
        cluster.seq += 1
        cluster.seen.append((cluster.seq, name, job("seen", name)))

    cluster.after_pod_reads.append(binder)
    before = sample("autoscaler_removal_blocking_pods_total", cause="bound")
    result = ctl(cluster, cloud, clock, delete_delay_after_taint_s=10).run_once()
    assert not [c for c in cloud.changes if c[0] == "terminate"] and "gpu-0" in cluster.nodes
    assert any(
        "the pods watch shows pods bound to it since the fresh read (research/seen)" in e
        for e in result.errors
    )
    assert sample("autoscaler_removal_blocking_pods_total", cause="bound") == before + 1


def test_a_node_is_not_terminated_before_it_was_tainted_and_cordoned_for_the_delay():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock, tainted_ago_s=4)
    result = ctl(cluster, cloud, clock, delete_delay_after_taint_s=10).run_once()
    assert "gpu-0" in cluster.nodes and not [c for c in cloud.changes if c[0] == "terminate"]
    assert any("tainted 4 s ago; removed 10 s after the taint at the earliest" in h for h in result.held)
    assert not result.errors
    clock.advance(6)
    ctl(cluster, cloud, clock, delete_delay_after_taint_s=10).run_once()
    assert "gpu-0" not in cluster.nodes and cloud.groups[WEST]["desired"] == 0


def test_a_node_someone_uncordoned_is_left_alone():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    original = cluster.read_node

    def uncordoned(name):
        n = original(name)
        n["spec"]["unschedulable"] = False
        return n

    cluster.read_node = uncordoned
    result = ctl(cluster, cloud, clock).run_once()
    assert "gpu-0" in cluster.nodes
    assert any("uncordoned by someone else" in e for e in result.errors)
    n = cluster.nodes["gpu-0"]
    assert all(t["key"] != TO_BE_DELETED_TAINT for t in n["spec"]["taints"]), "our mark is taken back"
    assert n["metadata"]["annotations"][SCALE_DOWN_ABORTED_ANNOTATION].endswith("uncordoned by someone else")


def test_a_pod_bound_between_the_last_read_and_the_deletion_is_reported():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    reads = {"n": 0}

    def binder(name):
        reads["n"] += 1
        if reads["n"] == 2:  # right after the last read: nothing can stop the deletion any more
            cluster.pods["research/unlucky"] = job("unlucky", name)

    cluster.after_pod_reads.append(binder)
    original = cluster.delete_node

    def delete_keeping_pods(
        name, uid=None, resource_version=None
    ):  # the pod stays until its garbage collection
        original(name, uid, resource_version)

    cluster.delete_node = delete_keeping_pods
    before = sample("autoscaler_removal_blocking_pods_total", cause="lost")
    result = ctl(cluster, cloud, clock).run_once()
    assert any(
        "pod research/unlucky bound to node gpu-0 as the autoscaler deleted that Node" in e
        for e in result.errors
    )
    assert ("research/unlucky", "NodeRemovedUnderPod") in [(e[0], e[1]) for e in cluster.events]
    assert sample("autoscaler_removal_blocking_pods_total", cause="lost") == before + 1


def test_our_cordon_does_not_keep_a_pending_pod_off_the_node():
    """A pending pod that fits the tainted, cordoned node reuses it: untainted and uncordoned, nothing bought."""
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    cluster.pods["research/train-0"] = gpu_pods(1)[0]
    result = ctl(cluster, cloud, clock).run_once()
    assert cloud.groups[WEST]["desired"] == 1 and cloud.groups[EAST]["desired"] == 0
    n = cluster.nodes["gpu-0"]
    assert (
        n["spec"]["unschedulable"] is False
        and CORDONED_BY_AUTOSCALER_ANNOTATION not in n["metadata"]["annotations"]
    )
    assert result.plan["node_states"]["gpu-0"] == "busy", "pending pods are planned onto it"


# -- aborted removals remembered ----------------------------------------------------------------------------------------
def test_a_node_whose_removal_was_called_off_is_not_tainted_again_before_the_recheck_timeout():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    live = LiveCluster(pods=cluster.pods.values(), nodes=cluster.nodes.values())
    n = live.nodes["gpu-0"]
    n["metadata"]["annotations"].update({"research.cluster/idle-since": iso(T0 - timedelta(hours=1)),
                                         SCALE_DOWN_ABORTED_ANNOTATION: f"{iso(T0 - timedelta(seconds=60))}; pod research/x"})  # fmt: skip
    result = ctl(live, cloud, clock, unremovable_recheck_s=300).run_once()
    assert ("taint", "gpu-0") not in live.changes
    assert any(
        "called off at" in h and "pod research/x" in h and "not tainted again before" in h
        for h in result.held
    )
    clock.advance(241)
    ctl(live, cloud, clock, unremovable_recheck_s=300).run_once()
    assert ("taint", "gpu-0") in live.changes
    assert live.nodes["gpu-0"]["spec"]["unschedulable"] is True


def test_a_node_running_a_pod_the_parser_rejects_is_never_tainted_and_the_pod_is_reported():
    clock = Clock()
    cluster, cloud, iid = idle_gpu_world(clock)
    live = LiveCluster(pods=cluster.pods.values(), nodes=cluster.nodes.values())
    live.nodes["gpu-0"]["metadata"]["annotations"]["research.cluster/idle-since"] = iso(
        T0 - timedelta(hours=1)
    )
    odd = job("odd", "gpu-0")
    odd["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "one"  # no quantity
    live.pods["research/odd"] = odd
    before = sample("autoscaler_removal_blocking_pods_total", cause="unparsed")
    c = ctl(live, cloud, clock)
    for _ in range(3):
        result = c.run_once()
        clock.advance(30)
    assert ("taint", "gpu-0") not in live.changes
    assert sample("autoscaler_unparsed_pods") == 1
    assert sample("autoscaler_removal_blocking_pods_total", cause="unparsed") == before + 1, "counted once"
    [(node, reason, message)] = live.node_events  # once, not every pass
    assert node == "gpu-0" and reason == "ScaleDownBlocked" and "research/odd" in message
    assert any("research/odd" in h for h in result.held)


# -- money on vanished and young pods -----------------------------------------------------------------------------------
def test_a_scale_up_for_pods_gone_by_a_fresh_read_is_not_bought():
    clock = Clock()
    cluster, cloud = world(gpu_pods(3), clock=clock, cpu_nodes=0)
    live = LiveCluster(pods=cluster.pods.values())
    live.pending_read = []  # deleted a moment ago; the cache (list_pods) still has them
    result = ctl(live, cloud, clock, confirm_scale_up_above=2).run_once()  # 3 nodes at $1/h: above
    assert cloud.groups[WEST]["desired"] == 0 and cloud.groups[EAST]["desired"] == 0
    assert any("are no longer pending by a fresh read" in h for h in result.held)
    assert result.plan["scale_up"] == {}


def test_a_cheap_scale_up_is_not_read_again_and_one_that_is_confirmed_goes_ahead():
    clock = Clock()
    cluster, cloud = world(gpu_pods(2), clock=clock, cpu_nodes=0)
    live = LiveCluster(pods=cluster.pods.values())
    ctl(live, cloud, clock, confirm_scale_up_above=10).run_once()  # the fakes' price: $1/h a node
    assert cloud.groups[WEST]["desired"] == 2
    cluster, cloud = world(gpu_pods(2), clock=clock, cpu_nodes=0)
    live = LiveCluster(pods=cluster.pods.values())
    live.pending_read = gpu_pods(1)  # one of the two is gone
    ctl(live, cloud, clock, confirm_scale_up_above=0).run_once()
    assert cloud.groups[WEST]["desired"] == 1


def test_the_fresh_read_asks_for_the_pods_bought_for_by_name():
    """Three pods need new nodes: the confirmation asks for those three (the adapter reads a few by name, each
    answered from its one object), not for every pending pod."""
    clock = Clock()
    cluster, cloud = world(gpu_pods(3), clock=clock, cpu_nodes=0)
    live = LiveCluster(pods=cluster.pods.values())
    ctl(live, cloud, clock, confirm_scale_up_above=0).run_once()
    assert live.pending_reads == [["research/train-0", "research/train-1", "research/train-2"]]
    assert cloud.groups[WEST]["desired"] == 3


def test_young_pods_trigger_no_scale_up_until_old_enough():
    clock = Clock()
    pods = gpu_pods(2)
    for p in pods:
        p["metadata"]["creationTimestamp"] = iso(T0 - timedelta(seconds=3))
    pods[1]["metadata"]["annotations"][POD_SCALE_UP_DELAY_ANNOTATION] = "1m"  # longer for this one
    cluster, cloud = world(pods, clock=clock, cpu_nodes=0)
    c = ctl(cluster, cloud, clock, new_pod_scale_up_delay_s=10)
    result = c.run_once()
    assert cloud.groups[WEST]["desired"] == 0
    assert any("2 pending pod(s) younger than their scale-up delay" in h for h in result.held)
    clock.advance(8)
    c.run_once()
    assert cloud.groups[WEST]["desired"] == 1
    clock.advance(60)
    c.run_once()
    assert cloud.groups[WEST]["desired"] == 2


# -- phantom capacity -----------------------------------------------------------------------------------------------------
def test_desired_capacity_with_no_instance_is_upcoming_only_for_the_boot_timeout():
    """The group says desired 1, no instance exists and no activity failed (a spot interruption AWS did not replace):
    the pending pod waits for that node only for the boot timeout, then the group backs off and the pod spills."""
    clock = Clock()
    cluster, cloud = world(gpu_pods(1), clock=clock, cpu_nodes=0)
    cloud.launch = False
    cloud.groups[WEST]["desired"] = 1
    c = ctl(cluster, cloud, clock)
    c.run_once()
    assert cloud.groups[EAST]["desired"] == 0, "within the boot timeout: the upcoming node is waited for"
    clock.advance(299)
    c.run_once()
    assert cloud.groups[EAST]["desired"] == 0
    clock.advance(2)
    result = c.run_once()
    assert cloud.groups[WEST]["desired"] == 0, "back to what exists"
    assert cloud.groups[EAST]["desired"] == 1, "the pod spills over"
    state = json.loads(cluster.state["group_state"])[WEST]
    assert (
        state["last_failure"]["reason"] == "never-registered"
        and "never launched" in state["last_failure"]["message"]
    )
    assert result.plan["group_state"][WEST]["failures"] == 1


def test_the_shortfall_clock_survives_a_restart():
    clock = Clock()
    cluster, cloud = world(gpu_pods(1), clock=clock, cpu_nodes=0)
    cloud.launch = False
    cloud.groups[WEST]["desired"] = 1
    ctl(cluster, cloud, clock).run_once()
    clock.advance(301)
    ctl(cluster, cloud, clock).run_once()  # a new process: it reads since when from the state ConfigMap
    assert cloud.groups[EAST]["desired"] == 1


# -- late writes and eventual consistency ---------------------------------------------------------------------------------
def test_a_desired_capacity_below_the_live_instances_is_raised_back():
    clock = Clock()
    cluster, cloud = world(clock=clock, cpu_nodes=3)
    g = cloud.groups["c-us-west-2-cpu"]
    g["desired"] = 1  # a deposed leader's late write; protection kept the three instances
    cluster = LiveCluster(nodes=cluster.nodes.values())
    statuses = []
    cluster.record_status_event = lambda reason, message, kind="Normal": statuses.append((reason, message))
    result = ctl(cluster, cloud, clock).run_once()
    assert g["desired"] == 3
    assert [a for a in result.actions if a["action"] == "set_desired"][0][
        "reason"
    ] == "desired 1 was below the 3 live instance(s)"
    assert statuses and statuses[0][0] == "DesiredBelowInstances"


class StaleCloud(FakeCloud):
    """Listings lag: ``stale`` listings after each change show the groups as they were before it."""

    def __init__(self, *a, stale=3, **kw):
        super().__init__(*a, **kw)
        self.stale, self.behind, self.old = stale, 0, None

    def _changed(self):
        if self.behind == 0:
            self.old = copy.deepcopy(list(self.groups.values()))
        self.behind = self.stale

    def set_desired(self, group, desired):
        self._changed()
        super().set_desired(group, desired)

    def terminate_instance(self, group, instance_id):
        self._changed()
        super().terminate_instance(group, instance_id)

    def list_groups(self):
        if self.behind:
            self.behind -= 1
            return copy.deepcopy(self.old)
        return super().list_groups()


def test_a_stale_listing_makes_no_identical_set_desired_again():
    clock = Clock()
    cluster, base = world(gpu_pods(2), clock=clock, cpu_nodes=0)
    cloud = StaleCloud(list(base.groups.values()), clock=clock)
    c = ctl(cluster, cloud, clock, aws_consistency_window_s=30)
    for _ in range(4):
        c.run_once()
        clock.advance(2)
    assert [ch for ch in cloud.changes if ch[0] == "set_desired"] == [("set_desired", WEST, 2)]


def test_an_instance_we_terminated_that_a_stale_listing_still_shows_is_no_launch_failure():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    stale = StaleCloud(list(cloud.groups.values()), clock=clock, stale=4)
    stale._next = cloud._next
    c = ctl(cluster, stale, clock, aws_consistency_window_s=30)
    c.run_once()
    assert ("terminate", WEST, iid) in stale.changes
    for _ in range(4):
        clock.advance(30)  # launched 2 h ago, no Node: it would look like an instance that never registered
        result = c.run_once()
        assert WEST not in (result.plan.get("group_state") or {}), result.plan.get("group_state")
    assert [ch for ch in stale.changes if ch[0] == "terminate"] == [("terminate", WEST, iid)]
    assert "gpu-0" not in cluster.nodes


def test_a_failed_termination_after_the_node_deletion_is_finished_later():
    clock = Clock()
    cluster, cloud, iid = draining_world(clock)
    cloud.fail["terminate_instance"] = [RuntimeError("throttled")]
    c = ctl(cluster, cloud, clock)
    c.run_once()
    assert "gpu-0" not in cluster.nodes and any(i["id"] == iid for i in cloud.groups[WEST]["instances"])
    assert iid in json.loads(cluster.state[STATE_REMOVING])
    clock.advance(10)
    result = ctl(
        cluster, cloud, clock
    ).run_once()  # even a new process: the removal is in the state ConfigMap
    assert not any(i["id"] == iid for i in cloud.groups[WEST]["instances"])
    assert WEST not in (result.plan.get("group_state") or {})


def test_takeover_state_lists_the_groups_left_alone():
    """Sanity: nothing of the above leaks into groups that have no pending writes or removals."""
    clock = Clock()
    cluster, cloud = world(clock=clock, cpu_nodes=1)
    result = ctl(cluster, cloud, clock, aws_consistency_window_s=30).run_once()
    assert not [a for a in result.actions if a["action"] in ("set_desired", "terminate")]
    assert result.errors == [] and GPU_LABELS


def test_a_pod_the_cache_shows_bound_after_the_taint_is_remembered_too():
    """The planner itself calls the removal off (the watch delivered the pod before the re-check): remembered, so the
    node is not tainted again as soon as that pod is gone."""
    clock = Clock()
    cluster, cloud, iid = draining_world(clock, tainted_ago_s=2)
    cluster.pods["research/sneaky"] = job("sneaky", "gpu-0")
    ctl(cluster, cloud, clock).run_once()
    n = cluster.nodes["gpu-0"]
    assert n["metadata"]["annotations"][SCALE_DOWN_ABORTED_ANNOTATION] == f"{iso(T0)}; pod research/sneaky"
    assert [(e[0], e[1]) for e in cluster.node_events] == [("gpu-0", "ScaleDownAborted")]
    del cluster.pods["research/sneaky"]
    n["metadata"]["annotations"]["research.cluster/idle-since"] = iso(T0 - timedelta(hours=1))
    clock.advance(60)
    result = ctl(cluster, cloud, clock).run_once()
    assert not any(t["key"] == TO_BE_DELETED_TAINT for t in n["spec"]["taints"])
    assert any("called off" in h for h in result.held)


# -- capacity bought for pods that vanished --------------------------------------------------------------------------
class LandingCluster(FakeCluster):
    """The live adapter's record of the nodes a pod was ever bound to (``landed_nodes``)."""

    def __init__(self, *a, landed=(), **kw):
        super().__init__(*a, **kw)
        self.landed = set(landed)

    def landed_nodes(self, present):
        return self.landed & present


def test_nodes_bought_for_pods_that_vanished_go_back_at_once_but_not_one_a_pod_landed_on():
    from tests.autoscaler.fakes import node

    clock = Clock()
    _, cloud = world(clock=clock, cpu_nodes=0)
    cluster = LandingCluster(pods=gpu_pods(3))
    c = ctl(cluster, cloud, clock)
    c.run_once()
    g = cloud.groups[WEST]
    assert g["desired"] == 3
    clock.advance(60)
    for i, inst in enumerate(g["instances"]):  # the instances register before the pods are bound
        cluster.nodes[f"gpu-{i}"] = node(f"gpu-{i}", g, inst["id"], created=clock.now())
    c.run_once()  # the pending pods are planned onto them
    cluster.pods.clear()  # and deleted
    cluster.landed = {"gpu-2"}  # a pod was bound to this one and left
    clock.advance(5)
    c.run_once()  # the plan sees them gone: their three slots are owed back
    clock.advance(5)
    result = c.run_once()
    tainted = sorted(s["node"] for s in result.plan["scale_down"] if s["action"] == "taint")
    assert tainted == ["gpu-0", "gpu-1"], result.plan["scale_down"]
    assert result.plan["node_states"]["gpu-2"] == "idle"
    clock.advance(30)
    later = c.run_once()
    assert sorted(s["node"] for s in later.plan["scale_down"] if s["action"] == "terminate") == [
        "gpu-0",
        "gpu-1",
    ]
    assert not [s for s in later.plan["scale_down"] if s["node"] == "gpu-2"], (
        "the slot owed went with gpu-0/1"
    )
