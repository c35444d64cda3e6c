"""The loop's timing: a pure batching window (cases as data) and the runner on a scripted clock."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from autoscaler.loop import BatchWindow, Runner
from tests.support import load_yaml

CASES = load_yaml(Path(__file__).parent / "batch_window_cases.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_batch_window(case):
    window = BatchWindow(case.get("scan", 10), idle_s=1.0, max_wait_s=10.0)
    assert window.due() == float("-inf"), "the first pass runs at once"
    for t in case.get("earlier", ()):
        window.event(t)
    window.ran(case["last_pass"])
    for t in case["events"]:
        window.event(t)
    assert window.due() == pytest.approx(case["due"])
    window.ran(case["due"])
    assert window.due() == pytest.approx(case["due"] + case.get("scan", 10)), "a pass covers earlier events"


class ScriptedTime:
    """A monotonic clock the runner's condition waits advance (no real sleeping)."""

    def __init__(self):
        self.t = 0.0


def test_runner_runs_passes_on_schedule_and_only_when_allowed():
    now = ScriptedTime()
    passes: list[float] = []
    allowed = {"yes": True}
    runner: Runner

    def run_pass():
        passes.append(now.t)
        if len(passes) == 3:
            allowed["yes"] = False
        if now.t >= 60:
            runner.stop()

    runner = Runner(run_pass, BatchWindow(10), may_run=lambda: allowed["yes"], monotonic=lambda: now.t)

    class Cond(threading.Condition):
        def wait(self, timeout=None):
            now.t += timeout  # time passes exactly as long as the runner waits
            if now.t >= 45 and not allowed["yes"]:
                allowed["yes"] = True
            return False

    runner._cond = Cond()
    runner.run()
    assert passes[:3] == [0.0, 10.0, 20.0]
    assert passes[3:] == [50.0, 60.0]  # 30 and 40 skipped: not the leader
    assert runner.passes == 5


def test_a_trigger_wakes_the_runner_early():
    runner_passes = []
    done = threading.Event()
    runner = Runner(lambda: (runner_passes.append(1), len(runner_passes) == 2 and done.set()),
                    BatchWindow(3600, idle_s=0.01, max_wait_s=0.05))  # fmt: skip
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    while not runner_passes:
        threading.Event().wait(0.01)
    runner.trigger()
    assert done.wait(10), "a pending pod brings the next pass forward from an hour to a moment"
    runner.stop()
    thread.join(10)
    assert not thread.is_alive()


def _run_scripted(runner: Runner, now) -> None:
    """Run ``runner`` to its stop on ``now``'s clock: each wait of the runner advances it by exactly its timeout."""

    class Cond(threading.Condition):
        def wait(self, timeout=None):
            now.t += timeout
            return False

    runner._cond = Cond()
    runner.run()


def test_the_after_pass_step_runs_after_each_pass_and_its_failure_stops_nothing():
    now = SimpleNamespace(t=0.0)
    log = []

    def run_pass():
        log.append("pass")
        if len([x for x in log if x == "pass"]) == 3:
            runner.stop()

    def after():
        log.append("after")
        raise RuntimeError("housekeeping failed")

    runner = Runner(run_pass, BatchWindow(10), monotonic=lambda: now.t, after_pass=after)

    _run_scripted(runner, now)
    assert log == ["pass", "after"] * 3 and runner.passes == 3


def test_the_start_of_a_pass_is_marked_before_any_later_event_is_heard():
    """``on_start`` (the adapter's pass mark) runs as the window closes, under the lock a trigger takes: an event
    during the pass opens the next window instead of being lost in this one."""
    now = SimpleNamespace(t=0.0)
    log = []

    def run_pass():
        log.append(("pass", now.t))
        if len(log) == 2:  # the first pass: a pod arrives while it runs
            runner.trigger()
        if now.t >= 20:
            runner.stop()

    runner = Runner(
        run_pass,
        BatchWindow(10, idle_s=1.0),
        monotonic=lambda: now.t,
        on_start=lambda: log.append(("mark", now.t)),
    )

    _run_scripted(runner, now)
    assert log[:4] == [
        ("mark", 0.0),
        ("pass", 0.0),
        ("mark", 0.1),
        ("pass", 0.1),
    ]  # the new window: a lone pod's, lone_idle_s later
