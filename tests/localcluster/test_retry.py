"""The agents' loop (localcluster/retry.py): the interval asked after every step, a wake event ending the wait."""

from __future__ import annotations

import logging
import threading

from localcluster import retry

log = logging.getLogger(__name__)


def _loop(interval, wake=None):
    stop, steps, stepped = threading.Event(), [], threading.Event()

    def step() -> None:
        steps.append(1)
        stepped.set()

    thread = threading.Thread(target=retry.every, args=(interval, stop, step, "test", log),
                              kwargs={"wake": wake}, daemon=True)  # fmt: skip
    thread.start()
    return stop, steps, stepped, thread


def test_a_wake_ends_a_long_idle_wait_and_the_interval_is_asked_after_every_step() -> None:
    wake, asked = threading.Event(), []

    def interval() -> float:
        asked.append(len(asked))
        return 3600.0  # idle: only a wake brings the next step

    stop, steps, stepped, thread = _loop(interval, wake)
    assert stepped.wait(10)
    stepped.clear()
    wake.set()
    assert stepped.wait(10), "the wake did not end the wait"
    stop.set()
    wake.set()
    thread.join(10)
    assert not thread.is_alive()
    assert len(steps) == 2 and len(asked) >= 1


def test_a_failing_step_is_retried_and_said_once(caplog) -> None:
    stop, calls = threading.Event(), []

    def step() -> None:
        calls.append(1)
        if len(calls) >= 3:
            stop.set()
        raise RuntimeError("no answer")

    with caplog.at_level(logging.WARNING):
        retry.every(lambda: 0.01, stop, step, "the test agent", log)
    assert len(calls) == 3
    assert [r.getMessage() for r in caplog.records] == [
        "the test agent failed (retried): RuntimeError: no answer"
    ]
