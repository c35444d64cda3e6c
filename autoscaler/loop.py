"""When passes run: a periodic scan, and sooner when new pods are pending (event-driven, batched).

A burst of pods arrives over a few seconds; planning after the first one would request capacity for a part of
it. So a pending pod opens a batching window. A pod that comes alone (no other new pending pod in the
``idle_s`` before it) is decided at once: the pass runs ``lone_idle_s`` after it (``--lone-pod-idle``, 100 ms:
time for a burst's second pod to come, a Job controller's next create a round trip later, and no more). Once a
second pod has come, or when the pod follows another within ``idle_s``, the window is a burst's or a trickle's:
the pass runs once no new pending pod has come for ``idle_s`` (``--batch-idle``, 1 s, Karpenter's batch idle
time), or ``max_wait_s`` (10 s) after the window opened, whichever is first. Without events, every
``scan_interval_s``. While a window is open the periodic pass waits for it too (it would otherwise plan on the
first part of a burst and buy for it, then again for the rest): the periodic pass is delayed by at most
``max_wait_s``. A pass covers the events before it began: the runner marks that moment (``on_start``) and the
cluster adapter leaves the pods first pending after it to the next window. :func:`due` is the pure timing rule
(the simulator runs it too), :class:`BatchWindow` keeps its inputs and :class:`Runner` sleeps on it in a thread.
The trade-off, measured on both traces with ``invoke simulate``: docs/benchmarks.md, "The batching window".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from autoscaler import metrics

log = logging.getLogger("autoscaler.loop")


def due(first: float, last: float, count: int, before: float | None, idle_s: float, max_wait_s: float,
        lone_idle_s: float) -> float:  # fmt: skip
    """When a window closes that opened at ``first`` and heard ``count`` new pending pods, the last at ``last``
    (``before``: the pod heard before ``first``, None if none): ``lone_idle_s`` after a pod that came alone (no
    other in the ``idle_s`` before it, and none since), ``idle_s`` after the last pod of a burst or of a trickle,
    ``max_wait_s`` after the first at most."""
    if count <= 1 and (before is None or first - before >= idle_s):
        return first + min(lone_idle_s, max_wait_s)
    return min(last + idle_s, first + max_wait_s)


class BatchWindow:
    """The next pass's due time, from the last pass and the pending-pod events since (times in seconds)."""

    def __init__(self, scan_interval_s: float, idle_s: float = 1.0, max_wait_s: float = 10.0,
                 lone_idle_s: float = 0.1):  # fmt: skip
        self.scan_interval_s = scan_interval_s
        self.idle_s = idle_s
        self.max_wait_s = max_wait_s
        self.lone_idle_s = min(lone_idle_s, idle_s)
        self.last_pass: float | None = None
        self.first_event: float | None = None
        self.last_event: float | None = None
        self.events = 0
        self.before: float | None = None  # the event before the window's first (an earlier window's last)
        self._heard: float | None = None  # the last event heard, windows closed or not

    def event(self, t: float) -> None:
        if self.first_event is None:
            self.first_event = t
            self.before = self._heard
        self.last_event = self._heard = t
        self.events += 1

    def due(self) -> float:
        """The time the next pass is due (the first pass is due at once)."""
        if self.last_pass is None:
            return float("-inf")
        if self.first_event is None:
            return self.last_pass + self.scan_interval_s
        # an open window is honoured by the periodic pass too
        return due(self.first_event, self.last_event, self.events, self.before, self.idle_s, self.max_wait_s,
                   self.lone_idle_s)  # fmt: skip

    def ran(self, t: float) -> None:
        """A pass started at ``t``: events before it are covered."""
        self.last_pass = t
        self.first_event = self.last_event = None
        self.events = 0


class Runner:
    def __init__(
        self,
        run_pass: Callable[[], object],
        window: BatchWindow,
        *,
        may_run: Callable[[], bool] = lambda: True,
        monotonic: Callable[[], float] = time.monotonic,
        after_pass: Callable[[], object] | None = None,
        on_start: Callable[[], object] | None = None,
    ):
        """``run_pass`` is ``Controller.run_once``; ``may_run`` (leader election) gates each pass;
        ``after_pass`` runs after each pass, outside its measured duration (the live process hands the pass's
        freed memory back to the system there: autoscaler.malloc); ``on_start`` runs as the window closes, before
        any later event can be heard (the cluster adapter marks which pending pods the pass covers:
        ``KubeCluster.mark_pass``)."""
        self._run_pass = run_pass
        self._on_start = on_start
        self._after_pass = after_pass
        self.window = window
        self._may_run = may_run
        self._monotonic = monotonic
        self._cond = threading.Condition()
        self._stop = False
        self.passes = 0
        self.last_pass_end: float | None = None

    def trigger(self) -> None:
        """A new pending pod (called from the informer's thread)."""
        with self._cond:
            self.window.event(self._monotonic())
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()

    def run(self) -> None:
        while True:
            with self._cond:
                while not self._stop:
                    wait = self.window.due() - self._monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stop:
                    return
                self.window.ran(self._monotonic())
                if self._on_start is not None:
                    self._on_start()
            if not self._may_run():
                self.last_pass_end = self._monotonic()  # alive, standing by
                continue
            start = self._monotonic()
            try:
                self._run_pass()
            except Exception:  # noqa: BLE001 - run_once catches its own; this is the last guard
                log.exception("pass crashed")
            finally:
                self.passes += 1
                self.last_pass_end = self._monotonic()
                metrics.LOOP_DURATION.observe(self.last_pass_end - start)
            if self._after_pass is not None:
                try:
                    self._after_pass()
                except Exception:  # noqa: BLE001 - housekeeping never stops the loop
                    log.exception("after-pass step failed")
