"""Optional Slack notifications of scale events and unschedulable pods, rate-limited.

The webhook URL is a secret: it comes from the environment (``AUTOSCALER_SLACK_WEBHOOK_URL``, in the cluster
from a Secret), is never logged, and only its host is ever shown. Messages are posted from a background thread
so a slow webhook never delays a pass; beyond ``per_minute`` messages in a minute the rest are counted and
summarized in the next message that goes out.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.request
from collections import deque
from urllib.parse import urlsplit

from autoscaler import metrics

log = logging.getLogger("autoscaler.notify")


class SlackNotifier:
    def __init__(
        self, webhook_url: str, *, per_minute: int = 6, timeout_s: float = 5.0, monotonic=time.monotonic
    ):
        parts = urlsplit(webhook_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("the Slack webhook URL must be an http(s) URL")
        self._url = webhook_url
        self.host = parts.hostname
        self.per_minute = per_minute
        self.timeout_s = timeout_s
        self._monotonic = monotonic
        self._sent: deque[float] = deque()
        self._suppressed = 0
        self._told_stuck: set[str] = set()
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=100)
        self._thread = threading.Thread(target=self._worker, name="slack", daemon=True)
        self._thread.start()

    # -- what to say -------------------------------------------------------------------------------------------
    def plan_done(self, plan: dict, result) -> None:
        """Called by the controller after each pass that acted."""
        up = plan.get("scale_up") or {}
        if up:
            parts = ", ".join(f"{n} in {g}" for g, n in sorted(up.items()))
            self.send(f":arrow_up: scaling up: {parts} for {result.pending_pods} pending pods")
        removed = [s["node"] for s in plan.get("scale_down") or [] if s.get("action") == "terminate"]
        if removed:
            self.send(f":arrow_down: removing {len(removed)} idle nodes: {', '.join(removed[:10])}")
        stuck_now = plan.get("unschedulable") or []
        stuck = [u for u in stuck_now if u["pod"] not in self._told_stuck]  # each stuck pod once
        self._told_stuck = {u["pod"] for u in stuck_now}
        if stuck:
            first = stuck[0]
            more = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
            self.send(f":warning: {first['pod']} cannot be scheduled: {first['reason']}{more}")

    def send(self, text: str) -> bool:
        """Queue ``text`` unless the rate limit is reached (then it is counted and summarized later)."""
        now = self._monotonic()
        while self._sent and now - self._sent[0] >= 60:
            self._sent.popleft()
        if len(self._sent) >= self.per_minute:
            self._suppressed += 1
            metrics.NOTIFICATIONS.labels("suppressed").inc()
            return False
        if self._suppressed:
            text += f"\n({self._suppressed} more messages suppressed by the rate limit)"
            self._suppressed = 0
        self._sent.append(now)
        try:
            self._queue.put_nowait(text)
        except queue.Full:
            metrics.NOTIFICATIONS.labels("suppressed").inc()
            return False
        return True

    # -- delivery ---------------------------------------------------------------------------------------------------
    def _worker(self) -> None:
        while True:
            text = self._queue.get()
            if text is None:
                return
            self._post(text)
            self._queue.task_done()

    def _post(self, text: str) -> None:
        data = json.dumps({"text": text}).encode()
        req = urllib.request.Request(self._url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 - http(s) checked
                resp.read()
            metrics.NOTIFICATIONS.labels("sent").inc()
        except Exception as e:  # noqa: BLE001 - a failed notification never affects the autoscaler
            metrics.NOTIFICATIONS.labels("failed").inc()
            log.warning("slack notification failed", extra={"host": self.host, "error": type(e).__name__})

    def flush(self, timeout_s: float = 5.0) -> None:
        """Wait until queued messages are posted (tests, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        self._queue.put(None)
