"""The faults of issue 28 ("never kill a job, round two"), each against the real ``autoscaler run`` process(es),
checked with kubectl and boto3 (and the harness's own record of what the API and AWS were asked), never the
autoscaler's logs. Each scenario prints one line of figures (``FIGURES ...``; ``pytest -s`` shows them).

Every scenario ends by checking the invariants the world's sampler watched all along: desired capacity never above a
group's maximum nor below the instances it has (outside the one scenario that injects exactly that).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.faults.harness import NodeGone, kubectl, wait_until
from tests.faults.test_faults import CPU, EAST, UNREADABLE, WEST, _gpu_pod, _survives


def figures(name: str, **values) -> None:
    print(f"FIGURES {name}: " + ", ".join(f"{k}={v}" for k, v in values.items()))


# -- recovery ---------------------------------------------------------------------------------------------------------
@pytest.mark.xfail(
    strict=True,
    reason="issue 33: kube-apiserver sends no line on a quiet watch (a bookmark about once a minute; the emulator "
    "sent one every second), so a watch cut every 2 s never confirms the cache: 30 s old on the real API server",
)
def test_watches_cut_every_2_s_keep_the_caches_fresh_and_a_new_pod_scaled_up_promptly(world):
    """Every watch (pods, nodes, PDBs) is cut 2 s after it opens, for 30 s: the caches must stay within a few scan
    intervals (1 s here) of the API, and a pod created then must be scaled up as promptly as without the fault.
    (A back-off that never resets reaches 16 s by then: caches 16 s old, the pod seen only at the next relist.)

    On the real API server a quiet watch carries no line at all (kube-apiserver bookmarks about once a minute; the
    emulator did every second): the informer confirms nothing while watches are cut, and the caches reach 30 s (the
    informer's silence timeout then relists). Confirming a quiet watch cut a second or more after kube-apiserver
    established it, as of its establishment, was tried: 6.7 s (load 7) to 9.7 s (load 30), still over the bound (each
    reconnect through the proxy takes 0.5 to 1.6 s), and it would confirm a wedged watch that a middlebox cuts. Open:
    strict xfail until the informer keeps this bound on the real API server."""
    r = world.replica("solo")
    world.faults.cut_watches_s = 2.0
    ages: list[float] = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        for cache in ("pods", "nodes"):
            age = r.metric("autoscaler_cache_age_seconds", cache=cache)
            if age is not None:
                ages.append(age)
        time.sleep(0.5)
    created = time.monotonic()
    _gpu_pod(world, "train-cut")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] >= 1, 30, "the new pod's scale-up")
    took = time.monotonic() - created
    figures("watch-cuts", cuts=world.faults.watch_cuts, max_cache_age_s=f"{max(ages):.1f}",
            scale_up_after_s=f"{took:.1f}")  # fmt: skip
    assert world.faults.watch_cuts >= 10
    assert max(ages) <= 5.0, f"a cache grew {max(ages):.1f} s old while the API answered"
    assert took <= 6.0, f"the new pod was scaled up {took:.1f} s after it was created"
    assert world.group(EAST)["DesiredCapacity"] == 0
    assert not world.violations, world.violations


# -- no money on vanished pods ------------------------------------------------------------------------------------------
def _set_desired_writes(door, group: str) -> list[int]:
    return [int(w["params"]["DesiredCapacity"]) for w in door.writes
            if w["action"] == "SetDesiredCapacity" and w["group"] == group]  # fmt: skip


def _burst_bought_once(
    world, r, pods: int, apart_s: float | None, writes_expected: list[int] | None = None
) -> None:
    """``apart_s``: the pods created one after the other that far apart; None: all at once, each create on a thread
    of its own (a Job controller's batch: its creates run in parallel)."""
    time.sleep(2)  # passes are running on the periodic scan
    submitted: list[float] = []
    if apart_s is None:
        start = threading.Barrier(pods)

        def create(i: int) -> None:
            start.wait()
            _gpu_pod(world, f"train-burst-{i}")
            submitted.append(time.monotonic())

        threads = [threading.Thread(target=create, args=(i,)) for i in range(pods)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        submitted.sort()
    else:
        for i in range(pods):
            _gpu_pod(world, f"train-burst-{i}")
            submitted.append(time.monotonic())
            time.sleep(apart_s)
    gaps = [f"{b - a:.2f}" for a, b in zip(submitted, submitted[1:], strict=False)]
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == pods, 30, "the burst's scale-up")
    time.sleep(3)
    writes = _set_desired_writes(r.door, WEST)
    figures("burst", set_desired_calls=len(writes), values=writes, nodes_bought=world.group(WEST)["DesiredCapacity"],
            nodes_needed=pods, gaps_s=gaps)  # fmt: skip
    assert writes == (writes_expected or [pods]), (
        f"the burst was bought in steps: {writes} (the pods were submitted {gaps} s apart)"
    )
    assert world.group(EAST)["DesiredCapacity"] == 0
    assert not world.violations, world.violations


def test_a_trickle_across_the_periodic_scan_is_bought_in_one_pass_with_a_1s_window(world):
    """Four 8-GPU pods arrive 0.4 s apart (a trickle over 1.2 s, across at least one periodic scan of 1 s) to an
    autoscaler run with ``--batch-idle 1s``: the first came alone and is decided at once (``--lone-pod-idle``,
    100 ms); the three that follow it within 1 s are a trickle's: the periodic pass must honour their window, and a
    pass that begins as they come must leave the pods it did not start with to the window, so the group is raised
    twice, to 1 and then to 4, not in steps of one."""
    _burst_bought_once(world, world.replica("solo", flags=("--batch-idle", "1s")), pods=4, apart_s=0.4,
                       writes_expected=[1, 4])  # fmt: skip


def test_a_burst_as_a_job_controller_makes_it_is_bought_in_one_pass_with_a_250ms_window(world):
    """``--batch-idle 250ms`` (the latency end of the setting): four 8-GPU pods created at once, as a Job
    controller creates one of its batches (its creates run in parallel): the second comes within the first's
    100 ms (``--lone-pod-idle``), so the window is a burst's and the group is raised once, to 4.

    The pods were created 50 ms apart before; on a loaded CI machine the watch (through the harness's proxy) once
    delivered the second more than 100 ms after the first, and the first was rightly decided alone ([1, 4]): a
    round trip's spacing tests the watch's timing, not the window's rule (tests/autoscaler/batch_window_cases.yaml
    holds the rule at each spacing)."""
    _burst_bought_once(world, world.replica("solo", flags=("--batch-idle", "250ms")), pods=4, apart_s=None)


# -- no binding slips through ---------------------------------------------------------------------------------------
def _pods_read(world, node: str) -> list[float]:
    """When kube-apiserver answered the autoscaler a read of the pods bound to ``node`` (fieldSelector
    spec.nodeName)."""
    return [r.at for r in world.faults.requests if r.method == "GET" and r.path.endswith("/pods")
            and r.query.get("fieldSelector") == f"spec.nodeName={node}"]  # fmt: skip


def test_a_pod_bound_right_after_the_fresh_read_of_its_node_is_never_killed(world):
    """A binder that ignores the taint and the cordon (spec.nodeName, the binding subresource, a second scheduler)
    binds a Job's pod to the idle node the instant the API has answered the autoscaler's fresh read of that node's
    pods: the read-to-terminate window. The removal must be called off and the job keep running. (The proxy holds
    the read's answer until the Job controller has made the pod: bound before the autoscaler sees its read.)"""
    node, iid = world.node_for(CPU)
    bound: dict[str, float] = {}

    def binder(method, path, query):
        if (not bound and method == "GET" and path.endswith("/pods")
                and query.get("fieldSelector") == f"spec.nodeName={node}"):  # fmt: skip
            bound["at"] = time.monotonic()
            world.job_on(node, "train-race")  # returns once the pod exists, bound to the node

    world.faults.hooks.append(binder)
    r = world.replica("solo")
    wait_until(lambda: bound, 60, "the autoscaler's fresh read of the idle node's pods")
    _survives(world, node, iid, "train-race", 8)
    wait_until(lambda: not world.has_taint(node), 10, "the node untainted (a pod runs there)")
    n = kubectl(world.kubeconfig, "get", "node", node)
    events = kubectl(world.kubeconfig, "get", "events", "-n", "default", "--field-selector",
                     f"involvedObject.name={node},reason=ScaleDownAborted")["items"]  # fmt: skip
    reads = _pods_read(world, node)
    figures("bound-after-read", pod_reads_of_node=len(reads), terminations=r.door.calls.get(
        "TerminateInstanceInAutoScalingGroup", 0), aborted_events=len(events))  # fmt: skip
    assert not n["spec"].get("unschedulable"), "our cordon is lifted with the taint"
    assert events and world.pod_key("train-race") in events[0]["message"], (
        "the pod that stopped the removal is named"
    )
    assert (r.metric("autoscaler_removal_blocking_pods_total", cause="bound") or 0) >= 1
    assert r.door.calls.get("TerminateInstanceInAutoScalingGroup", 0) == 0
    assert r.alive(), r.tail()


def test_a_removal_cordons_waits_a_pass_reads_last_then_deletes_the_node_then_terminates(world):
    """An idle node's removal as the API and AWS saw it: tainted and cordoned, for at least the delay after the taint
    (5 s here: the scan interval is 1 s); its pods read (a fresh read and a last read) after that; the Node deleted
    after the last read; the instance terminated only after the Node's deletion."""
    node, iid = world.node_for(CPU)
    marked: dict[str, float] = {}
    stop = threading.Event()

    def watch_marks():
        while not stop.wait(0.05):
            try:
                n = world.node(node)
            except NodeGone:
                return
            tainted = any(
                t.get("key") == "ToBeDeletedByClusterAutoscaler" for t in n["spec"].get("taints") or []
            )
            if tainted and n["spec"].get("unschedulable") and "at" not in marked:
                marked["at"] = time.monotonic()

    threading.Thread(target=watch_marks, daemon=True).start()
    r = world.replica("solo")
    wait_until(lambda: not world.in_service(CPU, iid), 60, "the idle node removed")
    stop.set()
    deleted = [
        q.at for q in world.faults.requests if q.method == "DELETE" and q.path.endswith(f"/nodes/{node}")
    ]
    terminated = [w["at"] for w in r.door.writes if w["action"] == "TerminateInstanceInAutoScalingGroup"]
    assert marked, "the node was never tainted and cordoned at once"
    assert deleted and terminated, (deleted, terminated)
    reads = [t for t in _pods_read(world, node) if marked["at"] <= t <= deleted[0]]
    figures("removal-order", marked_for_s=f"{deleted[0] - marked['at']:.1f}", pod_reads_before_delete=len(reads),
            delete_to_terminate_s=f"{terminated[0] - deleted[0]:.2f}")  # fmt: skip
    assert deleted[0] - marked["at"] >= 4.5, "the Node was deleted less than the delay after the taint"
    assert len(reads) >= 2, "a fresh read and a last read of its pods before the deletion"
    assert terminated[0] >= deleted[0], "the instance was terminated before its Node was deleted"
    assert len(terminated) == 1
    assert not world.violations, world.violations


# -- aborted removals remembered ------------------------------------------------------------------------------------------
def _passes(r) -> float:
    return sum(r.metric("autoscaler_loops_total", outcome=o) or 0.0 for o in ("ok", "error"))


def _taints_seen(world, node: str, seconds: float, r, passes: int) -> int:
    """How many times ``node`` went from untainted to tainted (sampled every 50 ms) during ``seconds``, and at least
    until the replica ``r`` ran ``passes`` more passes (a loaded machine slows the passes, not the clock)."""
    count, was = 0, world.has_taint(node)
    end, until = time.monotonic() + seconds, _passes(r) + passes
    while time.monotonic() < end or (_passes(r) < until and time.monotonic() < end + 3 * seconds):
        try:
            now = world.has_taint(node)
        except NodeGone:  # removed: it was tainted again and terminated
            return count + int(not was)
        count += int(now and not was)
        was = now
        time.sleep(0.05)
    return count


def test_a_pod_the_parser_rejects_on_an_idle_node_makes_no_taint_loop(world):
    """A Job's pod on an idle node whose requests the snapshot parser rejects: the node is never tainted (it is not
    proven empty), the pod is reported (an Event on the node, a metric), and nothing flaps."""
    node, iid = world.node_for(CPU)
    world.job_on(node, "train-odd", requests=UNREADABLE)  # kube-apiserver stores it, the planner refuses it
    r = world.replica("solo")
    # the idle threshold is 8 s: before, a taint every other pass after it
    taints = _taints_seen(world, node, 16, r, passes=12)
    events = kubectl(world.kubeconfig, "get", "events", "-n", "default", "--field-selector",
                     f"involvedObject.name={node},reason=ScaleDownBlocked")["items"]  # fmt: skip
    figures("unparsed-pod", taints=taints, blocked_events=len(events),
            unparsed_pods=r.metric("autoscaler_unparsed_pods"))  # fmt: skip
    assert taints == 0, f"the node was tainted {taints} times"
    assert events and world.pod_key("train-odd") in events[0]["message"]
    assert r.metric("autoscaler_unparsed_pods") == 1
    assert (r.metric("autoscaler_removal_blocking_pods_total", cause="unparsed") or 0) == 1
    _survives(world, node, iid, "train-odd", 1)


def test_a_node_whose_removal_was_called_off_is_not_tainted_again_at_once(world):
    """A Job's pod lands on the idle node the moment it is tainted (a binder that ignores the taint), so its removal
    is called off; the pod is deleted 2 s later. The node must not be tainted again for the recheck timeout
    (default 5 minutes), and the pod that stopped the removal is named in an Event on the node."""
    from tests.faults.test_faults import _job_lands_after_the_taint

    node, iid = world.node_for(CPU)
    r = world.replica("solo")
    _job_lands_after_the_taint(world, node, "train-sneak")
    wait_until(lambda: not world.has_taint(node), 20, "the removal called off")
    time.sleep(2)
    world.delete_job("train-sneak")
    retaints = _taints_seen(
        world, node, 14, r, passes=10
    )  # idle again: the idle threshold (8 s) passes meanwhile
    assert retaints == 0, f"tainted again {retaints} time(s) within 14 s"
    events = kubectl(world.kubeconfig, "get", "events", "-n", "default", "--field-selector",
                     f"involvedObject.name={node},reason=ScaleDownAborted")["items"]  # fmt: skip
    annotation = (kubectl(world.kubeconfig, "get", "node", node)["metadata"].get("annotations") or {}).get(
        "research.cluster/scale-down-aborted", ""
    )
    figures("called-off", taints_after=retaints, aborted_events=len(events), annotation=repr(annotation))
    assert events and world.pod_key("train-sneak") in events[0]["message"]
    assert world.pod_key("train-sneak") in annotation
    assert world.in_service(CPU, iid)
    assert not world.violations, world.violations


# -- no money on vanished or young pods -------------------------------------------------------------------------------
def test_pods_deleted_before_the_pass_buys_nothing(world):
    """Four 8-GPU pods are created and deleted half a second later, while the pods watch stalls right after it
    delivered them (the cache keeps pods that no longer exist): the purchase (4 x p3.16xlarge, about $98/h) must be
    confirmed by a fresh read first, which shows none of them pending, so nothing is bought."""
    r = world.replica("solo")
    time.sleep(2)
    for i in range(4):
        world.gpu_pod(f"train-gone-{i}", wait=False)  # the Job controller makes the four pods at once

    def delivered():
        return sum(
            1 for key in world.faults.delivered.get(r.name, ()) if key.startswith(f"{world.ns}/train-gone-")
        )

    wait_until(lambda: delivered() >= 4, 10, "the pods watch delivers the four pods", step=0.02)
    world.faults.stall = True
    for i in range(4):
        world.delete_job(f"train-gone-{i}")
    time.sleep(8)  # passes run on the stale cache (the window closes 1 s after the last pod)
    bought = world.group(WEST)["DesiredCapacity"] + world.group(EAST)["DesiredCapacity"]
    calls = len(_set_desired_writes(r.door, WEST)) + len(_set_desired_writes(r.door, EAST))
    figures("vanished", nodes_bought=bought, nodes_needed=0, set_desired_calls=calls)
    assert bought == 0, f"{bought} GPU nodes bought for pods that no longer exist"
    assert calls == 0
    assert not world.violations, world.violations


def test_pods_that_live_2_s_buy_nothing_with_a_minimum_pod_age(world):
    """Churn: a GPU pod created every 0.5 s and deleted 2 s later, for 8 s, with --new-pod-scale-up-delay 5s (set by
    its variable): no pod lives long enough to be bought for. A pod that stays is bought for once 5 s old."""
    r = world.replica("solo", env={"AUTOSCALER_NEW_POD_SCALE_UP_DELAY": "5s"})
    time.sleep(2)
    alive: list[tuple[float, str]] = []
    end, i = time.monotonic() + 8, 0
    while time.monotonic() < end:
        _gpu_pod(world, f"train-churn-{i}")
        alive.append((time.monotonic(), f"train-churn-{i}"))
        i += 1
        while alive and time.monotonic() - alive[0][0] >= 2:
            world.delete_job(alive.pop(0)[1])
        time.sleep(0.5)
    for _, name in alive:
        world.delete_job(name)
    time.sleep(3)
    churned = world.group(WEST)["DesiredCapacity"] + world.group(EAST)["DesiredCapacity"]
    created = time.monotonic()
    _gpu_pod(world, "train-stays")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 1, 30, "the pod that stays is bought for")
    took = time.monotonic() - created
    figures("churn", pods_churned=i, nodes_bought_for_churn=churned, stayer_bought_after_s=f"{took:.1f}")
    assert churned == 0, f"{churned} nodes bought for pods that lived 2 s"
    assert 4.0 <= took <= 12.0, f"the pod that stays was bought for {took:.1f} s after its creation"
    assert len(_set_desired_writes(r.door, WEST)) == 1
    assert not world.violations, world.violations


# -- phantom capacity ---------------------------------------------------------------------------------------------------
def test_desired_capacity_with_no_instance_is_waited_for_only_until_the_boot_timeout(world, monkeypatch):
    """us-west-2 has no p3.16xlarge capacity and AWS records no failed activity (the group shows desired 1 and no
    instance, as after a spot interruption that was never replaced): a GPU pod must not wait for that phantom node
    for ever; after the boot timeout (60 s here) the group backs off and the pod is bought for in us-east-1."""
    from localcluster import aws_server

    aws_server.LIMITS[("us-west-2", "p3.16xlarge")] = 0
    monkeypatch.setattr(aws_server, "_record_failure", lambda *a, **k: None)  # no activity tells why
    world.asg("us-west-2").set_desired_capacity(AutoScalingGroupName=WEST, DesiredCapacity=1)
    assert not world.group(WEST)["Instances"]
    r = world.replica("solo")
    _gpu_pod(world, "train-phantom")
    started = time.monotonic()
    wait_until(lambda: world.group(EAST)["DesiredCapacity"] == 1, 100, "the pod spills over to us-east-1")
    took = time.monotonic() - started
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 0, 10, "us-west-2 back to what exists")
    state = kubectl(world.kubeconfig, "get", "cm", "-n", "research-autoscaler", "research-autoscaler-state")
    figures("phantom", spilled_after_s=f"{took:.0f}", boot_timeout_s=60,
            west_failures=state["data"].get("group_state", ""))  # fmt: skip
    assert 50 <= took <= 80, f"spilled over {took:.0f} s after the pod appeared (boot timeout 60 s)"
    assert "never launched" in state["data"]["group_state"]
    assert r.metric("autoscaler_group_backoff", group=WEST) == 1
    assert not world.violations, world.violations


# -- AWS eventual consistency -------------------------------------------------------------------------------------------
def test_a_stale_describe_makes_no_identical_write_again_and_no_launch_failure_of_a_terminated_instance(
    world,
):
    """DescribeAutoScalingGroups answers as AWS did 8 s earlier (a lagging replica). (1) After its SetDesiredCapacity
    for a GPU pod the autoscaler keeps seeing the old desired capacity for 8 passes: it must not send the same write
    again. (2) The idle CPU node (launched 10 minutes ago) is removed meanwhile: its terminated instance, still listed
    InService with no Node, must not count as an instance that never registered (no failure, no back-off of the
    group), nor be terminated again."""
    node, iid = world.node_for(CPU, launched_ago_s=600)
    r = world.replica("solo", env={"AUTOSCALER_NODE_DELETE_DELAY_AFTER_TAINT": "2s"})
    r.door.stale["DescribeAutoScalingGroups"] = 8.0
    _gpu_pod(world, "train-stale")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 1, 30, "the scale-up")
    wait_until(lambda: not world.in_service(CPU, iid), 60, "the idle node removed")
    time.sleep(10)  # the stale listings show it InService without a Node meanwhile
    writes = _set_desired_writes(r.door, WEST)
    state = kubectl(world.kubeconfig, "get", "cm", "-n", "research-autoscaler", "research-autoscaler-state")
    groups = state["data"].get("group_state", "{}")
    terminations = r.door.calls.get("TerminateInstanceInAutoScalingGroup", 0)
    figures("stale-describe", set_desired_calls=len(writes), values=writes, terminations=terminations,
            group_state=groups)  # fmt: skip
    assert writes == [1], f"SetDesiredCapacity sent {len(writes)} times: {writes}"
    assert world.group(EAST)["DesiredCapacity"] == 0
    assert CPU not in groups, f"the group counted its terminated instance as a failure: {groups}"
    assert r.metric("autoscaler_group_backoff", group=CPU) in (None, 0.0)
    assert terminations == 1
    assert not world.violations, world.violations


# -- after a takeover -------------------------------------------------------------------------------------------------------
def _lease(world) -> dict:
    return kubectl(world.kubeconfig, "get", "lease", "-n", "research-autoscaler", "research-autoscaler")[
        "spec"
    ]


def test_a_new_leader_writes_only_after_a_deposed_leader_s_late_writes_have_landed(world):
    """The leader's Lease renewals fail (the rest of its traffic passes), so it keeps acting until its renew deadline
    (14 s after its last renewal); a GPU pod appears 9 s after that renewal, and the SetDesiredCapacity the leader
    sends for it is held 17 s in the network and then delivered (its client gave up at 4 s). The other replica takes
    over 20 s after the last renewal; its first write (to AWS or Kubernetes) must come after that late write landed."""
    from datetime import datetime

    a = world.replica("replica-a", leader_elect=True)
    b = world.replica("replica-b", leader_elect=True)
    first = wait_until(lambda: _lease(world).get("holderIdentity"), 40, "a leader")
    leader, other = (a, b) if first == "replica-a" else (b, a)
    wait_until(lambda: leader.metric("autoscaler_leader") == 1, 30, "the leader holds the lease")
    passes = leader.door.calls.get("DescribeAutoScalingGroups", 0)
    wait_until(lambda: leader.door.calls.get("DescribeAutoScalingGroups", 0) >= passes + 4, 30, "its passes")
    leader.door.late["SetDesiredCapacity"] = 17.0
    world.faults.fail_lease_writes_of = {leader.name}
    time.sleep(2.5)  # a renewal in flight has landed or failed
    renewed = datetime.fromisoformat(_lease(world)["renewTime"].replace("Z", "+00:00")).timestamp()
    r0 = time.monotonic() - (time.time() - renewed)  # the last renewal, on the harness's monotonic clock
    time.sleep(max(0.0, r0 + 9 - time.monotonic()))
    _gpu_pod(world, "train-late")
    wait_until(lambda: _lease(world).get("holderIdentity") == other.name, 60, "the takeover")
    wait_until(lambda: time.monotonic() > r0 + 14 + 17 + 1, 40, "every late write delivered")

    def first_write():
        # the old leader writes nothing after R+14 but the Events its writer thread still drains (queued before)
        writes = ("PUT", "POST", "PATCH", "DELETE")
        k8s = [q.at for q in world.faults.requests
               if q.method in writes and "/leases" not in q.path and "/events" not in q.path and q.at > r0 + 15]  # fmt: skip
        aws = [w["at"] for w in other.door.writes]
        return min(k8s + aws) if k8s + aws else None

    new_first = wait_until(first_write, 60, "the new leader's first write") - r0
    late = [w["at"] - r0 for w in leader.door.writes if w["action"] == "SetDesiredCapacity"]
    took_over = _lease(world)
    figures("takeover", late_writes_landed_at_s=[f"{t:.1f}" for t in late], new_leader_first_write_at_s=f"{new_first:.1f}",
            transitions=took_over.get("leaseTransitions"), west=world.group(WEST)["DesiredCapacity"])  # fmt: skip
    assert late, "the deposed leader sent no write in its last seconds (the fault did not happen)"
    assert max(late) < new_first, (
        f"late writes at {late} s landed after the new leader's first at {new_first:.1f} s"
    )
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 1, 30, "the pod's node")
    assert not world.violations, world.violations


def test_a_desired_capacity_lowered_below_the_live_instances_is_raised_back(world):
    """A deposed leader's late write (or a console edit) sets the CPU group's desired capacity to 1 while 3 protected
    instances run jobs: AWS keeps them (scale-in protection) and desired stays below them. The autoscaler must raise
    it back to 3 within a few passes and never lower it again."""
    nodes = [world.node_for(CPU) for _ in range(3)]
    for i, (node, _) in enumerate(nodes):
        world.job_on(node, f"train-keep-{i}")
    world.replica("solo")
    time.sleep(2)
    injected = time.monotonic()
    world.asg("us-west-2").set_desired_capacity(AutoScalingGroupName=CPU, DesiredCapacity=1)
    assert len(world.group(CPU)["Instances"]) == 3
    wait_until(
        lambda: world.group(CPU)["DesiredCapacity"] == 3, 20, "desired raised back to the live instances"
    )
    took = time.monotonic() - injected
    world.violations.clear()  # the sampler saw the injected state; from here on it must hold
    time.sleep(5)
    figures(
        "raise-back", raised_after_s=f"{took:.1f}", desired=world.group(CPU)["DesiredCapacity"], instances=3
    )
    assert world.group(CPU)["DesiredCapacity"] == 3
    assert all(world.in_service(CPU, iid) for _, iid in nodes)
    assert not world.violations, world.violations
