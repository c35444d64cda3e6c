"""The Kubernetes adapter over HTTP against the emulator, with the unmodified official client."""

from __future__ import annotations

import threading
import time

import pytest

from autoscaler.adapters.informer import Gone
from autoscaler.adapters.kubernetes import NodeChanged
from autoscaler.emulator.api import Reply, WatchStream, status_body
from clusterspec.names import (
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    TO_BE_DELETED_TAINT,
)
from tests.autoscaler.model.builders import pod as model_pod

TAINT = {"key": TO_BE_DELETED_TAINT, "value": "1767225600", "effect": "NoSchedule"}


def submit(emu, pod: dict) -> dict:
    with emu.model.lock:
        return emu.model.submit_pod(pod)


def settle(emu, seconds: float = 60) -> None:
    with emu.model.lock:
        emu.model.advance(emu.model.now() + seconds)


def names(objects: list[dict], namespace: str = "research") -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects if o["metadata"].get("namespace") == namespace)


def wait_until(check, timeout_s: float = 10.0) -> None:
    """A correctness wait for background threads (a timeout, never a performance assertion)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def fail_requests(emu, method: str, path_part: str, times: int, status: int = 500) -> dict:
    """The emulator answers the first ``times`` matching requests with ``status``."""
    real, seen = emu.api.handle, {"n": 0}

    def handle(m, path, *rest):
        if m == method and path_part in path and seen["n"] < times:
            seen["n"] += 1
            return Reply(status, status_body(status, "InternalError", "injected"))
        return real(m, path, *rest)

    emu.api.handle = handle
    return seen


def test_sync_lists_every_object_page_by_page(kube, emu):
    for i in range(5):
        submit(emu, model_pod(f"p{i}", gpus=16))  # fits no node: stays pending
    kube.sync()
    pods = kube.list_pods()
    assert names(pods) == ["p0", "p1", "p2", "p3", "p4"]
    assert {(p["kind"], p["apiVersion"]) for p in pods} == {("Pod", "v1")}
    assert kube.informers["pods"].pages >= 3  # page size 2
    assert len(kube.list_nodes()) == 2 and kube.list_nodes()[0]["kind"] == "Node"
    assert kube.list_pdbs() == [] and kube.synced()


def test_watch_applies_changes_and_reports_pending_pods(kube, emu):
    pending = []
    kube.on_pending_pod = lambda p: pending.append(p["metadata"]["name"])
    kube.start()
    assert kube.wait_synced(10)
    submit(emu, model_pod("new", gpus=16))
    wait_until(lambda: names(kube.list_pods()) == ["new"])
    assert set(pending) == {"new"}  # added, then perhaps modified (still pending): each may trigger
    with emu.model.lock:
        emu.model.delete_pod("research", "new")
    wait_until(lambda: names(kube.list_pods()) == [])


def test_a_watch_the_server_ends_resumes_from_its_version_without_relisting(kube, emu):
    informer = kube.informers["pods"]
    informer.watch_timeout_s = 1
    informer.start()
    assert informer.synced.wait(10)
    wait_until(lambda: informer.watches >= 3)  # the server ended two watches (timeoutSeconds=1)
    submit(emu, model_pod("after", gpus=16))
    wait_until(lambda: names(informer.items()) == ["after"])
    assert informer.relists == 1


def test_an_expired_watch_relists(kube, emu):
    informer = kube.informers["pods"]
    informer.sync()
    submit(emu, model_pod("late", gpus=16))
    emu.api.hub.compact()
    with pytest.raises(Gone):
        informer.watch_once()
    informer.start()
    wait_until(lambda: informer.relists >= 2 and names(informer.items()) == ["late"])


def test_a_failing_list_is_retried_after_a_back_off(kube, emu):
    seen = fail_requests(emu, "GET", "/api/v1/nodes", times=2)
    informer = kube.informers["nodes"]
    threading.Thread(target=informer.run, kwargs={"backoff_s": 0.05}, daemon=True).start()
    assert informer.synced.wait(10)
    assert seen["n"] == 2 and len(informer.items()) == 2


def cut_watches(emu, after_s: float) -> dict:
    """Every watch of the emulator breaks ``after_s`` after it opened (the connection closes mid-stream, no last
    chunk: the client sees a broken response), as a load balancer that drops long connections does."""
    real, seen = emu.api.handle, {"cut": 0}

    def handle(m, path, query, *rest):
        result = real(m, path, query, *rest)
        if not isinstance(result, WatchStream):
            return result

        end = time.monotonic() + after_s

        def events(inner=result.events):
            for event in inner:  # bookmarks come every 0.2 s, so the cut is prompt
                if time.monotonic() > end:
                    seen["cut"] += 1
                    raise ConnectionResetError("injected: watch cut")
                yield event

        return WatchStream(events())

    emu.api.handle = handle
    return seen


def test_a_watch_cut_after_it_was_established_resumes_without_a_relist_or_a_longer_back_off(kube, emu):
    informer = kube.informers["pods"]
    seen = cut_watches(emu, 1.2)  # open over a second: established, then cut
    informer.start()
    assert informer.synced.wait(10)
    wait_until(lambda: seen["cut"] >= 2 and informer.resumed >= 2)
    submit(emu, model_pod("during-cuts", gpus=16))
    wait_until(lambda: names(informer.items()) == ["during-cuts"])
    assert informer.relists == 1, "a cut watch resumes from its resourceVersion"
    assert informer.backoff == informer.backoff_s
    assert informer.age() < 2


def test_the_back_off_grows_over_failed_lists_and_resets_after_a_healthy_watch(kube, emu):
    seen = fail_requests(emu, "GET", "/api/v1/nodes", times=4)
    informer = kube.informers["nodes"]
    informer.watch_timeout_s = 1
    threading.Thread(
        target=informer.run, kwargs={"backoff_s": 0.05, "max_backoff_s": 0.2}, daemon=True
    ).start()
    assert informer.synced.wait(10)
    assert seen["n"] == 4
    assert informer.max_backoff_s == 0.2  # capped: 0.05, 0.1, 0.2, 0.2
    wait_until(lambda: informer.backoff == 0.05)  # the watch after the list ran (and ended) normally


def test_very_short_watches_back_off(kube, emu):
    informer = kube.informers["pods"]
    informer.backoff_s, informer.max_backoff_s = 0.05, 0.4
    informer.watch_timeout_s = 1  # the healthy watch after the fault ends (and resets the back-off) sooner
    informer.sync()
    real = emu.api.handle

    def handle(m, path, query, *rest):
        if query.get("watch") in ("1", "true"):
            return Reply(500, status_body(500, "InternalError", "injected"))
        return real(m, path, query, *rest)

    emu.api.handle = handle
    threading.Thread(target=informer.run, daemon=True).start()
    # each watch fails at once (not established): the back-off grows although every relist succeeds
    wait_until(lambda: informer.backoff == 0.4)
    emu.api.handle = real
    wait_until(lambda: informer.backoff == 0.05)


def test_taints_and_annotations(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    kube.taint_node(name, TAINT)
    kube.taint_node(name, TAINT)  # already there: no change
    assert [t["key"] for t in emu.model.node(name)["spec"]["taints"]] == [
        "nvidia.com/gpu",
        TO_BE_DELETED_TAINT,
    ]
    kube.annotate_node(name, {"a": "1", "b": "2"})
    kube.annotate_node(name, {"a": None})
    annotations = emu.model.node(name)["metadata"]["annotations"]
    assert "a" not in annotations and annotations["b"] == "2"
    kube.untaint_node(name, TO_BE_DELETED_TAINT)
    kube.untaint_node(name, TO_BE_DELETED_TAINT)
    assert [t["key"] for t in emu.model.node(name)["spec"]["taints"]] == ["nvidia.com/gpu"]


def test_a_taint_racing_another_writer_rereads_and_keeps_both_changes(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    real = emu.api.handle

    def handle(m, path, *rest):
        if (
            m == "PATCH"
            and path.endswith(f"/nodes/{name}")
            and any(isinstance(a, bytes) and b"resourceVersion" in a for a in rest)
        ):
            emu.api.handle = real  # once: someone else labels the node between our read and our patch
            with emu.model.lock:
                emu.model.annotate_node(name, {"other-writer": "yes"})
        return real(m, path, *rest)

    emu.api.handle = handle
    kube.taint_node(name, TAINT)
    node = emu.model.node(name)
    assert TO_BE_DELETED_TAINT in [t["key"] for t in node["spec"]["taints"]]
    assert node["metadata"]["annotations"]["other-writer"] == "yes"


def test_transient_errors_on_writes_are_retried(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    seen = fail_requests(emu, "PATCH", f"/nodes/{name}", times=2, status=503)
    kube.annotate_node(name, {"a": "1"})
    assert seen["n"] == 2 and emu.model.node(name)["metadata"]["annotations"]["a"] == "1"


def test_a_persistent_error_is_one_line(kube, emu):
    fail_requests(emu, "DELETE", "/nodes/", times=100)
    with pytest.raises(RuntimeError, match=r"^delete node \S+: HTTP 500 ") as e:
        kube.delete_node("whatever")
    assert "\n" not in str(e.value)


def test_delete_node(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    kube.delete_node(name)
    kube.delete_node(name)  # already gone: fine
    assert name not in {n["metadata"]["name"] for n in emu.model.nodes()}


def test_marking_for_removal_taints_and_cordons_in_one_write_and_unmarking_takes_both_back(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    kube.annotate_node(name, {SCALE_DOWN_ABORTED_ANNOTATION: "2026-01-01T00:00:00Z; pod research/x"})
    kube.mark_for_removal(name, TAINT)
    n = emu.model.node(name)
    assert (
        TO_BE_DELETED_TAINT in [t["key"] for t in n["spec"]["taints"]] and n["spec"]["unschedulable"] is True
    )
    assert n["metadata"]["annotations"][CORDONED_BY_AUTOSCALER_ANNOTATION] == "true"
    assert SCALE_DOWN_ABORTED_ANNOTATION not in n["metadata"]["annotations"], "a new removal starts afresh"
    kube.unmark(
        name, [TO_BE_DELETED_TAINT], {SCALE_DOWN_ABORTED_ANNOTATION: "2026-01-01T00:01:00Z; pod research/y"}
    )
    n = emu.model.node(name)
    assert TO_BE_DELETED_TAINT not in [t["key"] for t in n["spec"].get("taints") or []]
    assert (
        not n["spec"].get("unschedulable")
        and CORDONED_BY_AUTOSCALER_ANNOTATION not in n["metadata"]["annotations"]
    )
    assert n["metadata"]["annotations"][SCALE_DOWN_ABORTED_ANNOTATION].endswith("pod research/y")


def test_a_node_someone_else_cordoned_stays_cordoned(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    kube.core.patch_node(name, {"spec": {"unschedulable": True}})  # an operator's kubectl cordon
    kube.mark_for_removal(name, TAINT)
    assert CORDONED_BY_AUTOSCALER_ANNOTATION not in (
        emu.model.node(name)["metadata"].get("annotations") or {}
    )
    kube.unmark(name, [TO_BE_DELETED_TAINT])
    assert emu.model.node(name)["spec"]["unschedulable"] is True


def test_a_node_deletion_with_preconditions_refuses_a_node_that_changed(kube, emu):
    kube.sync()
    name = kube.list_nodes()[0]["metadata"]["name"]
    read = kube.read_node(name)
    kube.annotate_node(name, {"changed": "since the read"})
    with pytest.raises(NodeChanged, match="changed since it was read"):
        kube.delete_node(name, read["metadata"]["uid"], read["metadata"]["resourceVersion"])
    assert name in {n["metadata"]["name"] for n in emu.model.nodes()}
    read = kube.read_node(name)
    kube.delete_node(name, read["metadata"]["uid"], read["metadata"]["resourceVersion"])
    assert name not in {n["metadata"]["name"] for n in emu.model.nodes()}


def test_the_fresh_read_of_pending_pods_and_the_pods_watch_since_a_mark(kube, emu):
    kube.start()
    assert kube.wait_synced(10)
    node = kube.list_nodes()[0]["metadata"]["name"]
    mark = kube.pod_event_mark()
    submit(emu, model_pod("waiting", gpus=16))
    bound = model_pod("bound", gpus=0, duration=None)
    bound["spec"]["nodeName"] = node
    submit(emu, bound)
    wait_until(
        lambda: (
            {"research/bound"} <= {f"research/{p['metadata']['name']}" for p in kube.pods_seen_on(node, mark)}
        )
    )
    assert kube.pods_seen_on(node, kube.pod_event_mark()) == []
    assert [p["metadata"]["name"] for p in kube.read_pending_pods()] == ["waiting"]


def test_a_pass_plans_only_on_the_pods_pending_when_it_began(kube, emu):
    """The loop marks the pass's start as it closes the batching window: a pod the watch first shows pending after
    that belongs to the next window (its event opens it) and is left out of this pass's pods; one pending before
    stays in, changed or not, and so does every bound pod."""
    kube.start()
    assert kube.wait_synced(10)
    submit(emu, model_pod("before", gpus=16))
    wait_until(lambda: names(kube.list_pods()) == ["before"])
    kube.mark_pass()
    submit(emu, model_pod("during", gpus=16))
    bound = model_pod("bound", gpus=0, duration=None)
    bound["spec"]["nodeName"] = kube.list_nodes()[0]["metadata"]["name"]
    submit(emu, bound)
    informer = kube.informers["pods"]
    wait_until(lambda: {"during", "bound"} <= set(names(informer.items())))
    assert names(kube.list_pods()) == ["before", "bound"]
    kube.mark_pass()  # the next pass
    assert names(kube.list_pods()) == ["before", "bound", "during"]


def test_evictions_respect_disruption_budgets(kube, emu):
    for i in range(2):
        submit(emu, model_pod(f"web-{i}", gpus=1, labels={"app": "web"}, duration=None))
    settle(emu)
    with emu.model.lock:
        emu.model.create("poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "research"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})  # fmt: skip
    settle(emu, 1)
    assert kube.evict_pod("research", "web-0") is True
    settle(emu, 1)
    assert kube.evict_pod("research", "web-1") is False  # 429: the budget needs it
    assert kube.evict_pod("research", "gone") is True  # 404: nothing left to evict
    kube.sync()
    assert names(kube.list_pods()) == ["web-1"] and names(kube.list_pdbs()) == ["web"]


def test_events_on_pods(kube, emu):
    p = submit(emu, model_pod("job-0", gpus=16))
    kube.record_event(
        p, "NotTriggerScaleUp", "pod didn't trigger scale-up: needs 16 nvidia.com/gpu", "Warning"
    )
    assert kube.flush_events(10), "queued Events are written by the Event writer's thread"
    [event] = [e for e in emu.model.events_for("research", "job-0") if e["reason"] == "NotTriggerScaleUp"]
    assert event["type"] == "Warning" and "16 nvidia.com/gpu" in event["message"]
    assert event["involvedObject"]["kind"] == "Pod" and event["source"]["component"] == "research-autoscaler"


def test_state_and_status_configmaps(kube):
    assert kube.read_state() == {}
    kube.write_state({"group_state": "{}", "failures_read_until": "2026-01-01T00:00:00Z"})
    kube.write_state({"group_state": '{"g": {}}', "failures_read_until": "2026-01-01T00:00:10Z"})
    assert kube.read_state() == {"group_state": '{"g": {}}', "failures_read_until": "2026-01-01T00:00:10Z"}
    kube.write_status({"summary": "{}"})
    assert kube.read_state()["group_state"] == '{"g": {}}'


def test_a_silent_watch_is_dropped_and_relisted_and_the_cache_age_stays_bounded(kube, emu):
    """A pods watch that sends nothing (no event, no bookmark) while the list still answers: the socket read
    timeout (``silence_s``) drops it and the list refreshes the cache, which a stalled watch alone would never do."""
    from autoscaler.emulator.api import WatchStream

    original = emu.api.handle
    stalled = {"on": True}

    def handle(method, path, query, content_type, body):
        result = original(method, path, query, content_type, body)
        if isinstance(result, WatchStream) and stalled["on"]:

            def silent():
                while stalled["on"] and not emu.api.stopping:
                    time.sleep(0.1)
                yield from ()

            return WatchStream(silent())
        return result

    emu.api.handle = handle
    informer = kube.informers["pods"]
    informer.silence_s = 1.0
    informer.start()
    assert informer.synced.wait(10)
    submit(emu, model_pod("unseen", gpus=16))  # only a relist can bring it in
    wait_until(lambda: names(informer.items()) == ["unseen"])
    assert informer.relists >= 2 and informer.age() < 5
    stalled["on"] = False
