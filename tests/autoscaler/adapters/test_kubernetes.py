"""The Kubernetes adapter over HTTP against the real kube-apiserver (the run's shared control plane), with the
unmodified official client: its caches pointed at the test's own namespace and kwok nodes; faults on the wire from
the TLS proxy of tests/faults/kube_proxy.py."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from autoscaler.adapters.informer import Gone
from autoscaler.adapters.kubernetes import KubeCluster, NodeChanged, api_client
from clusterspec.names import (
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    TO_BE_DELETED_TAINT,
)
from tests.autoscaler import real_kube
from tests.autoscaler.real_kube import wait_until

TAINT = {"key": TO_BE_DELETED_TAINT, "value": "1767225600", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


class World:
    """A namespace and two 8-GPU kwok nodes of the test's own on the shared control plane."""

    def __init__(self, kube):
        self.kube = kube
        self.ns = kube.namespace("adapter")
        self.nodes = [real_kube.node(kube, self.ns, taints=[GPU_TAINT]) for _ in range(2)]
        self.admin = api_client(str(kube.admin_kubeconfig))
        self.core = client.CoreV1Api(self.admin)

    def submit(self, name: str, gpus: int = 16, **kw) -> dict:
        """A pod of the test's namespace (16 GPUs fits no node: it stays pending)."""
        body = real_kube.pod(name, self.ns, gpus=gpus, **kw)
        return self.core.api_client.sanitize_for_serialization(self.core.create_namespaced_pod(self.ns, body))

    def node(self, name: str) -> dict | None:
        try:
            return json.loads(self.core.read_node(name, _preload_content=False).data)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def cluster(self, kubeconfig: str | None = None) -> KubeCluster:
        api = api_client(kubeconfig or str(self.kube.admin_kubeconfig))
        return real_kube.scope(KubeCluster(api, namespace=self.ns, page_size=2, watch_timeout_s=2), self.ns)

    def close(self):
        real_kube.delete_nodes(self.kube, self.ns)
        self.kube.kubectl("delete", "namespace", self.ns, "--wait=false")
        self.admin.close()


@pytest.fixture
def world(kube):
    w = World(kube)
    yield w
    w.close()


@pytest.fixture
def cluster(world):
    c = world.cluster()
    yield c
    c.stop()
    c.api.close()


@pytest.fixture
def faulty(world, kube, tmp_path):
    """The adapter through the fault proxy: (cluster, faults)."""
    with real_kube.proxied(kube, tmp_path, world.ns) as (kubeconfig, faults):
        c = world.cluster(str(kubeconfig))
        yield c, faults
        c.stop()
        c.api.close()


def names(objects: list[dict], namespace: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects if o["metadata"].get("namespace") == namespace)


def taint_keys(node: dict) -> list[str]:
    """The taints this adapter and the test set (the node controllers' own node.kubernetes.io/* aside)."""
    return [
        t["key"] for t in node["spec"].get("taints") or [] if not t["key"].startswith("node.kubernetes.io/")
    ]


def fail_requests(faults, method: str, path_part: str, times: int, status: int = 500,
                  watches: bool = False) -> dict:  # fmt: skip
    """The proxy answers the first ``times`` matching requests (lists and reads; watches too with ``watches``)
    with ``status``, without forwarding them."""
    seen = {"n": 0}

    def intercept(m, path, query, body):
        watching = query.get("watch") in ("1", "true")
        if m == method and path_part in path and (watches or not watching) and seen["n"] < times:
            seen["n"] += 1
            return status, "InternalError" if status == 500 else "ServiceUnavailable"
        return None

    faults.intercept.append(intercept)
    return seen


def test_sync_lists_every_object_page_by_page(cluster, world):
    for i in range(5):
        world.submit(f"p{i}")
    cluster.sync()
    pods = cluster.list_pods()
    assert names(pods, world.ns) == ["p0", "p1", "p2", "p3", "p4"]
    assert {(p["kind"], p["apiVersion"]) for p in pods} == {("Pod", "v1")}
    assert cluster.informers["pods"].pages >= 3  # page size 2
    nodes = cluster.list_nodes()
    assert sorted(n["metadata"]["name"] for n in nodes) == sorted(world.nodes) and nodes[0]["kind"] == "Node"
    assert cluster.list_pdbs() == [] and cluster.synced()


def test_watch_applies_changes_and_reports_pending_pods(cluster, world):
    pending = []
    cluster.on_pending_pod = lambda p: pending.append(p["metadata"]["name"])
    cluster.start()
    assert cluster.wait_synced(10)
    world.submit("new")
    wait_until(lambda: names(cluster.list_pods(), world.ns) == ["new"])
    assert pending == ["new"]
    world.core.delete_namespaced_pod("new", world.ns)
    wait_until(lambda: names(cluster.list_pods(), world.ns) == [])


def test_only_a_pod_that_becomes_demand_opens_the_batching_window(cluster, world):
    """A pending pod's later changes (kube-scheduler's PodScheduled condition on each pod of a burst, a label)
    and a DaemonSet's pods (several on each new node) do not hold the loop's window open: bench-live's decision latency had one window per change. A gated pod is
    no demand until its gates are lifted, and then it is heard of."""
    pending = []
    cluster.on_pending_pod = lambda p: pending.append(p["metadata"]["name"])
    cluster.start()
    assert cluster.wait_synced(10)
    world.submit("burst-0")
    gated = real_kube.pod("gated", world.ns, gpus=16)
    gated["spec"]["schedulingGates"] = [{"name": "research.cluster/quota"}]
    world.core.create_namespaced_pod(world.ns, gated)
    wait_until(lambda: set(names(cluster.list_pods(), world.ns)) == {"burst-0", "gated"})
    world.core.patch_namespaced_pod("burst-0", world.ns, {"metadata": {"labels": {"seen": "yes"}}})
    daemon = real_kube.pod("plugin-x", world.ns)  # a DaemonSet's pod for a new node: no demand of a job
    daemon["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "plugin",
                                              "uid": "5e0a1c4e-0000-4000-8000-000000000001"}]  # fmt: skip
    world.core.create_namespaced_pod(world.ns, daemon)
    # gated: its arrival says the events before it came first
    marker = real_kube.pod("marker", world.ns, gpus=16)
    marker["spec"]["schedulingGates"] = [{"name": "research.cluster/quota"}]
    world.core.create_namespaced_pod(world.ns, marker)
    wait_until(lambda: "marker" in names(cluster.list_pods(), world.ns))
    assert pending == ["burst-0"]
    world.core.patch_namespaced_pod("gated", world.ns, {"spec": {"schedulingGates": None}})
    wait_until(lambda: pending == ["burst-0", "gated"])


def test_a_watch_the_server_ends_resumes_from_its_version_without_relisting(cluster, world):
    informer = cluster.informers["pods"]
    informer.watch_timeout_s = 1
    informer.start()
    assert informer.synced.wait(10)
    wait_until(lambda: informer.watches >= 3)  # the server ended two watches (timeoutSeconds=1)
    world.submit("after")
    wait_until(lambda: names(informer.items(), world.ns) == ["after"])
    assert informer.relists == 1


def test_an_expired_watch_relists(faulty, world):
    """A watch from a resourceVersion kube-apiserver no longer holds is answered 410 Expired (as the watch cache
    answers one older than its window; compacting the shared etcd to provoke it would expire every other test's
    watches), at the proxy: the informer relists."""
    cluster, faults = faulty
    informer = cluster.informers["pods"]
    informer.sync()
    stale = informer.resource_version
    world.submit("late")
    expired = {"n": 0}

    def intercept(m, path, query, body):  # every watch from the listed version: it has expired
        if query.get("watch") in ("1", "true") and query.get("resourceVersion") == stale:
            expired["n"] += 1
            return 410, "Expired"
        return None

    faults.intercept.append(intercept)
    with pytest.raises(Gone):
        informer.watch_once()
    informer.start()
    wait_until(lambda: informer.relists >= 2 and names(informer.items(), world.ns) == ["late"])
    assert expired["n"] == 2, "the direct watch and the loop's first one; then a relist and a fresh version"


def test_a_failing_list_is_retried_after_a_back_off(faulty, world):
    cluster, faults = faulty
    seen = fail_requests(faults, "GET", "/api/v1/nodes", times=2)
    informer = cluster.informers["nodes"]
    threading.Thread(target=informer.run, kwargs={"backoff_s": 0.05}, daemon=True).start()
    assert informer.synced.wait(10)
    assert seen["n"] == 2 and len(informer.items()) == 2


def test_a_watch_cut_after_it_was_established_resumes_without_a_relist_or_a_longer_back_off(faulty, world):
    cluster, faults = faulty
    informer = cluster.informers["pods"]
    faults.cut_watches_s = 1.2  # open over a second: established, then cut (the connection closes mid-stream)
    informer.start()
    assert informer.synced.wait(10)
    wait_until(lambda: faults.watch_cuts >= 2 and informer.resumed >= 2)
    world.submit("during-cuts")
    wait_until(lambda: names(informer.items(), world.ns) == ["during-cuts"])
    assert informer.relists == 1, "a cut watch resumes from its resourceVersion"
    assert informer.backoff == informer.backoff_s
    assert informer.age() < 2


def test_the_back_off_grows_over_failed_lists_and_resets_after_a_healthy_watch(faulty):
    cluster, faults = faulty
    seen = fail_requests(faults, "GET", "/api/v1/nodes", times=4)
    informer = cluster.informers["nodes"]
    informer.watch_timeout_s = 1
    threading.Thread(
        target=informer.run, kwargs={"backoff_s": 0.05, "max_backoff_s": 0.2}, daemon=True
    ).start()
    assert informer.synced.wait(10)
    assert seen["n"] == 4
    assert informer.max_backoff_s == 0.2  # capped: 0.05, 0.1, 0.2, 0.2
    wait_until(lambda: informer.backoff == 0.05)  # the watch after the list ran (and ended) normally


def test_very_short_watches_back_off(faulty):
    cluster, faults = faulty
    informer = cluster.informers["pods"]
    informer.backoff_s, informer.max_backoff_s = 0.05, 0.4
    informer.watch_timeout_s = 1  # the healthy watch after the fault ends (and resets the back-off) sooner
    informer.sync()
    failing = {"on": True}

    def intercept(m, path, query, body):
        if failing["on"] and query.get("watch") in ("1", "true"):
            return 500, "InternalError"
        return None

    faults.intercept.append(intercept)
    threading.Thread(target=informer.run, daemon=True).start()
    # each watch fails at once (not established): the back-off grows although every relist succeeds
    wait_until(lambda: informer.backoff == 0.4)
    failing["on"] = False
    wait_until(lambda: informer.backoff == 0.05)


def test_taints_and_annotations(cluster, world):
    name = world.nodes[0]
    cluster.taint_node(name, TAINT)
    cluster.taint_node(name, TAINT)  # already there: no change
    assert taint_keys(world.node(name)) == ["nvidia.com/gpu", TO_BE_DELETED_TAINT]
    cluster.annotate_node(name, {"a": "1", "b": "2"})
    cluster.annotate_node(name, {"a": None})
    annotations = world.node(name)["metadata"]["annotations"]
    assert "a" not in annotations and annotations["b"] == "2"
    cluster.untaint_node(name, TO_BE_DELETED_TAINT)
    cluster.untaint_node(name, TO_BE_DELETED_TAINT)
    assert taint_keys(world.node(name)) == ["nvidia.com/gpu"]


def test_a_taint_racing_another_writer_rereads_and_keeps_both_changes(faulty, world):
    cluster, faults = faulty
    name = world.nodes[0]
    raced = {"n": 0}

    def intercept(m, path, query, body):
        if m == "PATCH" and path.endswith(f"/nodes/{name}") and b"resourceVersion" in (body or b"") \
                and not raced["n"]:  # fmt: skip
            raced["n"] += 1  # once: someone else annotates the node between our read and our patch
            world.core.patch_node(name, {"metadata": {"annotations": {"other-writer": "yes"}}})
        return None

    faults.intercept.append(intercept)
    cluster.taint_node(name, TAINT)
    node = world.node(name)
    assert raced["n"] == 1
    assert TO_BE_DELETED_TAINT in taint_keys(node)
    assert node["metadata"]["annotations"]["other-writer"] == "yes"
    patches = [r.status for r in faults.requests if r.method == "PATCH" and r.path.endswith(f"/nodes/{name}")]
    assert patches == [409, 200], "kube-apiserver refused the stale patch; the reread one went through"


def test_transient_errors_on_writes_are_retried(faulty, world):
    cluster, faults = faulty
    name = world.nodes[0]
    seen = fail_requests(faults, "PATCH", f"/nodes/{name}", times=2, status=503)
    cluster.annotate_node(name, {"a": "1"})
    assert seen["n"] == 2 and world.node(name)["metadata"]["annotations"]["a"] == "1"


def test_a_persistent_error_is_one_line(faulty):
    cluster, faults = faulty
    fail_requests(faults, "DELETE", "/nodes/", times=100)
    with pytest.raises(RuntimeError, match=r"^delete node \S+: HTTP 500 ") as e:
        cluster.delete_node("whatever")
    assert "\n" not in str(e.value)


def test_delete_node(cluster, world):
    name = world.nodes[0]
    cluster.delete_node(name)
    cluster.delete_node(name)  # already gone: fine
    assert world.node(name) is None


def test_marking_for_removal_taints_and_cordons_in_one_write_and_unmarking_takes_both_back(cluster, world):
    name = world.nodes[0]
    cluster.annotate_node(name, {SCALE_DOWN_ABORTED_ANNOTATION: "2026-01-01T00:00:00Z; pod research/x"})
    cluster.mark_for_removal(name, TAINT)
    n = world.node(name)
    assert TO_BE_DELETED_TAINT in taint_keys(n) and n["spec"]["unschedulable"] is True
    assert n["metadata"]["annotations"][CORDONED_BY_AUTOSCALER_ANNOTATION] == "true"
    assert SCALE_DOWN_ABORTED_ANNOTATION not in n["metadata"]["annotations"], "a new removal starts afresh"
    cluster.unmark(
        name, [TO_BE_DELETED_TAINT], {SCALE_DOWN_ABORTED_ANNOTATION: "2026-01-01T00:01:00Z; pod research/y"}
    )
    n = world.node(name)
    assert TO_BE_DELETED_TAINT not in taint_keys(n)
    assert (
        not n["spec"].get("unschedulable")
        and CORDONED_BY_AUTOSCALER_ANNOTATION not in n["metadata"]["annotations"]
    )
    assert n["metadata"]["annotations"][SCALE_DOWN_ABORTED_ANNOTATION].endswith("pod research/y")


def test_a_node_someone_else_cordoned_stays_cordoned(cluster, world):
    name = world.nodes[0]
    world.core.patch_node(name, {"spec": {"unschedulable": True}})  # an operator's kubectl cordon
    cluster.mark_for_removal(name, TAINT)
    assert CORDONED_BY_AUTOSCALER_ANNOTATION not in (world.node(name)["metadata"].get("annotations") or {})
    cluster.unmark(name, [TO_BE_DELETED_TAINT])
    assert world.node(name)["spec"]["unschedulable"] is True


def test_a_node_deletion_with_preconditions_refuses_a_node_that_changed(cluster, world):
    name = world.nodes[0]
    read = cluster.read_node(name)
    cluster.annotate_node(name, {"changed": "since the read"})
    with pytest.raises(NodeChanged, match="changed since it was read"):
        cluster.delete_node(name, read["metadata"]["uid"], read["metadata"]["resourceVersion"])
    assert world.node(name) is not None
    for _ in range(5):  # kwok renews the node's status too: a read can be stale by the delete
        read = cluster.read_node(name)
        try:
            cluster.delete_node(name, read["metadata"]["uid"], read["metadata"]["resourceVersion"])
            break
        except NodeChanged:
            continue
    assert world.node(name) is None


def test_the_fresh_read_of_pending_pods_and_the_pods_watch_since_a_mark(cluster, world):
    cluster.start()
    assert cluster.wait_synced(10)
    node = world.nodes[0]
    mark = cluster.pod_event_mark()
    world.submit("waiting")
    world.submit("bound", gpus=0, node=node)
    wait_until(lambda: {"bound"} <= {p["metadata"]["name"] for p in cluster.pods_seen_on(node, mark) or []})
    later = cluster.pod_event_mark()
    assert [p for p in cluster.pods_seen_on(node, later) or [] if p["metadata"]["name"] != "bound"] == []
    pending = cluster.read_pending_pods()
    assert names(pending, world.ns) == ["waiting"]
    mine = next(p for p in pending if p["metadata"]["name"] == "waiting")
    assert mine["metadata"]["uid"] and "spec" not in mine, "metadata only: names and uids confirm a purchase"
    by_name = cluster.read_pending_pods(keys=[f"{world.ns}/waiting", f"{world.ns}/bound", f"{world.ns}/gone"])
    assert [p["metadata"]["name"] for p in by_name] == [
        "waiting"
    ]  # bound is not pending, gone does not exist
    assert by_name[0]["metadata"]["uid"] == mine["metadata"]["uid"]


def test_a_pass_plans_only_on_the_pods_pending_when_it_began(cluster, world):
    """The loop marks the pass's start as it closes the batching window: a pod the watch first shows pending after
    that belongs to the next window (its event opens it) and is left out of this pass's pods; one pending before
    stays in, changed or not, and so does every bound pod."""
    cluster.start()
    assert cluster.wait_synced(10)
    world.submit("before")
    wait_until(lambda: names(cluster.list_pods(), world.ns) == ["before"])
    cluster.mark_pass()
    world.submit("during")
    world.submit("bound", gpus=0, node=world.nodes[0])
    informer = cluster.informers["pods"]
    wait_until(lambda: {"during", "bound"} <= set(names(informer.items(), world.ns)))
    assert names(cluster.list_pods(), world.ns) == ["before", "bound"]
    cluster.mark_pass()  # the next pass
    assert names(cluster.list_pods(), world.ns) == ["before", "bound", "during"]


def test_evictions_respect_disruption_budgets(cluster, world):
    """The Eviction API of kube-apiserver: the budget (kept by the disruption controller) lets one of two running
    pods go, refuses the other (429), and a pod that is gone is nothing left to evict (404)."""
    mine = {real_kube.OWNER: world.ns}
    for i in range(2):
        world.submit(f"web-{i}", gpus=1, selector=mine, labels={"app": "web"}, scheduled=True)
    client.PolicyV1Api(world.admin).create_namespaced_pod_disruption_budget(world.ns, {
        "metadata": {"name": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})  # fmt: skip

    def allowed():
        pdb = client.PolicyV1Api(world.admin).read_namespaced_pod_disruption_budget("web", world.ns)
        return pdb.status and pdb.status.current_healthy == 2 and pdb.status.disruptions_allowed == 1

    wait_until(allowed, 60, "both pods running (kwok) and the budget counting them")
    assert cluster.evict_pod(world.ns, "web-0") is True
    assert cluster.evict_pod(world.ns, "web-1") is False  # 429: the budget needs it
    assert cluster.evict_pod(world.ns, "gone") is True  # 404: nothing left to evict

    def after():
        cluster.sync()
        return names(cluster.list_pods(), world.ns) == ["web-1"]

    wait_until(after, 60, "web-0 deleted")
    assert names(cluster.list_pdbs(), world.ns) == ["web"]


def test_events_on_pods(cluster, world):
    p = world.submit("job-0")
    cluster.record_event(
        p, "NotTriggerScaleUp", "pod didn't trigger scale-up: needs 16 nvidia.com/gpu", "Warning"
    )
    assert cluster.flush_events(10), "queued Events are written by the Event writer's thread"
    [event] = [
        e for e in real_kube.events_for(world.kube, world.ns, "job-0") if e["reason"] == "NotTriggerScaleUp"
    ]
    assert event["type"] == "Warning" and "16 nvidia.com/gpu" in event["message"]
    assert event["involvedObject"]["kind"] == "Pod" and event["source"]["component"] == "research-autoscaler"
    assert event["involvedObject"]["uid"] == p["metadata"]["uid"]


def test_state_and_status_configmaps(cluster):
    assert cluster.read_state() == {}
    cluster.write_state({"group_state": "{}", "failures_read_until": "2026-01-01T00:00:00Z"})
    cluster.write_state({"group_state": '{"g": {}}', "failures_read_until": "2026-01-01T00:00:10Z"})
    assert cluster.read_state() == {"group_state": '{"g": {}}', "failures_read_until": "2026-01-01T00:00:10Z"}
    cluster.write_status({"summary": "{}"})
    assert cluster.read_state()["group_state"] == '{"g": {}}'


def test_a_silent_watch_is_dropped_and_relisted_and_the_cache_age_stays_bounded(faulty, world):
    """A pods watch that sends nothing (no event, no bookmark) while the list still answers: the socket read
    timeout (``silence_s``) drops it and the list refreshes the cache, which a stalled watch alone would never do."""
    cluster, faults = faulty
    faults.stall = True  # the proxy holds every pods watch line (the connection stays open and silent)
    informer = cluster.informers["pods"]
    informer.silence_s = 1.0
    informer.watch_timeout_s = 60  # the server would end the watch only after a minute
    informer.start()
    assert informer.synced.wait(10)
    world.submit("unseen")  # only a relist can bring it in
    wait_until(lambda: names(informer.items(), world.ns) == ["unseen"])
    assert informer.relists >= 2 and informer.age() < 5
    faults.stall = False
