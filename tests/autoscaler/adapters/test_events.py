"""The Event writer (autoscaler.adapters.events) against fake APIs that hang, fail or answer: it never blocks its
caller, never holds more than its queue, and correlates as client-go's event recorder does (tools/record)."""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path

import pytest

from autoscaler import metrics
from autoscaler.adapters.events import (
    COMBINED_PREFIX,
    Correlator,
    EventNotFound,
    EventRejected,
    EventWriter,
)
from tests.support import load_yaml

CASES = load_yaml(Path(__file__).parent / "event_correlator_cases.yaml")


def ref(name: str, namespace: str = "research") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace, "uid": f"uid-{name}"}


def dropped(reason: str) -> float:
    return metrics.REGISTRY.get_sample_value("autoscaler_events_dropped_total", {"reason": reason}) or 0.0


class Sink:
    """An Event API: keeps what is created and patched. ``gate`` holds every write until it is set (an API that
    hangs); ``down`` makes every write a connection error; ``fail`` raises its exceptions in turn."""

    def __init__(self, gate: threading.Event | None = None, *, down: bool = False, fail=()):
        self.gate, self.down, self.fail = gate, down, list(fail)
        self.entered = threading.Event()
        self.attempts = 0
        self.calls: list[tuple] = []
        self.objects: dict[tuple[str, str], dict] = {}
        self.rv = 0

    def _enter(self) -> None:
        self.attempts += 1
        self.entered.set()
        if self.gate is not None:
            self.gate.wait()
        if self.down:
            raise ConnectionError("connection refused")
        if self.fail:
            raise self.fail.pop(0)

    def _stored(self, obj: dict) -> dict:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(obj)

    def create(self, event: dict) -> dict:
        self._enter()
        meta = event["metadata"]
        self.calls.append(("create", meta["name"], event["count"], event["message"]))
        self.objects[(meta["namespace"], meta["name"])] = obj = copy.deepcopy(event)
        return self._stored(obj)

    def patch(self, namespace: str, name: str, patch: dict) -> dict:
        self._enter()
        obj = self.objects.get((namespace, name))
        if obj is None:
            raise EventNotFound(name)
        self.calls.append(("patch", name, patch["count"], patch["message"]))
        obj.update(patch)
        return self._stored(obj)


def writer(sink: Sink, **kw) -> EventWriter:
    kw.setdefault("qps", None)
    kw.setdefault("retry_s", 0.0)
    return EventWriter(sink, component="research-autoscaler", **kw)


def wait_until(check, timeout_s: float = 10.0) -> None:
    """A correctness wait for the writer's thread (a timeout, never a performance assertion)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def in_thread(fn, timeout_s: float = 10.0):
    """Run ``fn`` in a thread; its result, or AssertionError when it did not return (it blocked)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), "blocked"
    return out[0]


# -- correlation: client-go's EventCorrelator ------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_correlation_follows_client_go(case):
    now = [1_767_225_600.0]
    correlator = Correlator(lambda: now[0])
    w = EventWriter(Sink(), component="research-autoscaler", clock=lambda: now[0], correlator=correlator)
    names: list[str | None] = []
    for i, step in enumerate(case["steps"]):
        for k in range(step.get("repeat", 1)):
            now[0] = 1_767_225_600.0 + step["at"]
            event = w.build(ref(step.get("object", "a")), step.get("reason", "TriggeredScaleUp"), step["message"],
                            step.get("type", "Normal"))  # fmt: skip
            out = correlator.correlate(event)
            where = f"{case['name']}: step {i} #{k}"
            if step["expect"] == "skip":
                assert out is None, where
                names.append(None)
                continue
            assert out is not None, where
            got, patch = out
            assert ("patch" if patch else "create") == step["expect"], where
            if "count" in step:
                assert got["count"] == patch["count"] == step["count"] + k, where
            assert got["message"].startswith(COMBINED_PREFIX) == bool(step.get("combined")), where
            if "same_as" in step:
                assert got["metadata"]["name"] == names[step["same_as"]], where
            if k == 0:
                names.append(got["metadata"]["name"])
            correlator.update_state({**got, "metadata": {**got["metadata"], "resourceVersion": "1"}})


def test_the_correlator_caches_are_bounded():
    """Each of the three caches is an LRU (maxLruCacheEntries in client-go): a pass over many pods does not grow
    them past their size."""
    now = [0.0]
    correlator = Correlator(lambda: now[0], lru=8)
    w = EventWriter(Sink(), component="c", clock=lambda: now[0], correlator=correlator, capacity=1000)
    for i in range(100):
        correlator.correlate(w.build(ref(f"p{i}"), "TriggeredScaleUp", "m"))
    assert max(correlator.cache_sizes()) == 8


# -- never blocks, never grows ------------------------------------------------------------------------------------
def test_submit_returns_at_once_while_the_api_hangs_and_the_queue_stays_at_its_cap():
    gate = threading.Event()
    sink = Sink(gate)
    w = writer(sink, capacity=5)
    before = dropped("queue_full")
    try:
        assert w.submit(ref("p0"), "TriggeredScaleUp", "m")
        assert sink.entered.wait(10), "the writer's thread took p0 and hangs in its write"
        results = in_thread(lambda: [w.submit(ref(f"p{i}"), "TriggeredScaleUp", "m") for i in range(1, 21)])
        assert results == [True] * 5 + [False] * 15
        assert w.pending() == 6, "five queued and one in flight, never more"
        assert w.dropped == {"queue_full": 15} and dropped("queue_full") - before == 15
        assert sink.calls == []
    finally:
        gate.set()
    assert w.flush(10)
    assert [c[1].split(".")[0] for c in sink.calls] == [f"p{i}" for i in range(6)]


def test_an_api_that_is_down_empties_the_queue_into_the_drop_counter():
    sink = Sink(down=True)
    w = writer(sink, capacity=10, max_tries=3)
    before = dropped("api_error")
    for i in range(200):
        w.submit(ref(f"p{i}"), "TriggeredScaleUp", "m")
        assert w.pending() <= 10 + 1
    assert w.flush(30)
    assert sum(w.dropped.values()) == 200 and set(w.dropped) <= {"api_error", "queue_full"}
    assert sink.attempts == 3 * w.dropped["api_error"], "each Event that reached the writer: max_tries tries"
    assert dropped("api_error") - before == w.dropped["api_error"]
    assert sink.calls == []


def test_a_rejected_event_is_not_tried_again():
    """recordEvent: a StatusError from the server (malformed, forbidden) is abandoned, not retried."""
    sink = Sink(fail=[EventRejected("HTTP 422")])
    w = writer(sink, max_tries=5)
    w.submit(ref("p"), "TriggeredScaleUp", "m")
    assert w.flush(10)
    assert sink.attempts == 1 and w.dropped == {"rejected": 1} and sink.calls == []


def test_a_transient_error_is_tried_again():
    sink = Sink(fail=[ConnectionError("reset"), RuntimeError("HTTP 503")])
    w = writer(sink, max_tries=3)
    w.submit(ref("p"), "TriggeredScaleUp", "m")
    assert w.flush(10)
    assert sink.attempts == 3 and w.dropped == {} and [c[0] for c in sink.calls] == ["create"]


# -- patch on repeat ------------------------------------------------------------------------------------------------
def test_a_repeat_patches_count_and_last_timestamp_of_the_existing_event():
    now = [1_767_225_600.0]
    sink = Sink()
    w = writer(sink, clock=lambda: now[0])
    w.correlator.clock = lambda: now[0]
    pod = ref("train-0")
    w.submit(pod, "TriggeredScaleUp", "pod triggered scale-up")
    assert w.flush(10)
    now[0] += 600
    w.submit(pod, "TriggeredScaleUp", "pod triggered scale-up")
    assert w.flush(10)
    (create, patch) = sink.calls
    assert create[0] == "create" and patch[:3] == ("patch", create[1], 2)
    [stored] = sink.objects.values()
    assert stored["count"] == 2 and stored["lastTimestamp"] == "2026-01-01T00:10:00Z"
    assert stored["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert w.written == {"create": 1, "patch": 1}


def test_a_repeat_of_an_expired_event_creates_it_again():
    """recordEvent: a PATCH that finds the Event gone (the API server expired it) creates it."""
    sink = Sink()
    w = writer(sink)
    pod = ref("train-0")
    w.submit(pod, "TriggeredScaleUp", "m")
    assert w.flush(10)
    sink.objects.clear()
    w.submit(pod, "TriggeredScaleUp", "m")
    assert w.flush(10)
    assert [(c[0], c[2]) for c in sink.calls] == [("create", 1), ("create", 2)]
    assert sink.calls[0][1] == sink.calls[1][1]


# -- drain on stop ---------------------------------------------------------------------------------------------------
def test_close_writes_what_is_queued():
    gate = threading.Event()
    sink = Sink(gate)
    w = writer(sink)
    for i in range(3):
        w.submit(ref(f"p{i}"), "TriggeredScaleUp", "m")
    out: list[int] = []
    closer = threading.Thread(target=lambda: out.append(w.close(10)))
    closer.start()
    gate.set()
    closer.join(10)
    assert out == [0] and len(sink.calls) == 3
    before = dropped("shutdown")
    assert w.submit(ref("late"), "TriggeredScaleUp", "m") is False
    assert w.dropped == {"shutdown": 1} and dropped("shutdown") - before == 1


def test_close_is_bounded_when_the_api_hangs():
    gate = threading.Event()
    sink = Sink(gate)
    w = writer(sink)
    try:
        for i in range(4):
            w.submit(ref(f"p{i}"), "TriggeredScaleUp", "m")
        assert sink.entered.wait(10)
        assert in_thread(lambda: w.close(0.05)) == 3, "the three queued behind the hanging write"
        assert w.dropped == {"shutdown": 3}
    finally:
        gate.set()


def test_close_does_not_wait_out_a_retry():
    """Once shut down, the recorder tries each Event once more at most (event.go, Shutdown)."""
    sink = Sink(down=True)
    w = writer(sink, retry_s=3600.0, max_tries=3)
    w.submit(ref("p"), "TriggeredScaleUp", "m")
    assert sink.entered.wait(10)
    assert in_thread(lambda: w.close(10)) == 0
    assert w.dropped == {"api_error": 1} and sink.attempts <= 2


def test_the_writer_wide_rate_limit_spaces_writes():
    """qps/burst: the first ``burst`` writes go at once, the next waits for a token (on the writer's thread)."""
    sink = Sink()
    w = writer(sink, qps=0.001, burst=2)
    for i in range(3):
        w.submit(ref(f"p{i}"), "TriggeredScaleUp", "m")
    wait_until(lambda: w.pending() == 1)
    assert len(sink.calls) == 2, "the third waits for a token (one per 1,000 s)"
    assert in_thread(lambda: w.close(10)) == 0, "closing ends the wait: the last one is tried once"
    assert len(sink.calls) == 3
