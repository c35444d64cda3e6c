"""Slack notifications against a webhook server on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from autoscaler.notify import SlackNotifier


@pytest.fixture
def webhook():
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/XXXX", received
    server.shutdown()


class Minutes:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_scale_events_and_unschedulable_pods_are_posted(webhook):
    url, received = webhook
    notifier = SlackNotifier(url)
    plan = {
        "scale_up": {"dlr-us-east-1-gpu-v100x8": 3},
        "scale_down": [
            {"node": "ip-10-0-1-5", "action": "terminate"},
            {"node": "ip-10-0-1-6", "action": "taint"},
        ],
        "unschedulable": [
            {"pod": "alice/big", "reason": "needs 16 nvidia.com/gpu; the largest node type offers 8"},
            {"pod": "alice/big2", "reason": "same"},
        ],  # fmt: skip
    }
    notifier.plan_done(plan, SimpleNamespace(pending_pods=24))
    notifier.flush()
    texts = [r["text"] for r in received]
    assert texts[0] == ":arrow_up: scaling up: 3 in dlr-us-east-1-gpu-v100x8 for 24 pending pods"
    assert texts[1] == ":arrow_down: removing 1 idle nodes: ip-10-0-1-5"
    assert texts[2].startswith(":warning: alice/big cannot be scheduled: needs 16 nvidia.com/gpu") and (
        "(and 1 more)" in texts[2]
    )
    plan["unschedulable"].append({"pod": "bob/huge", "reason": "needs 32 nvidia.com/gpu"})
    notifier.plan_done({"unschedulable": plan["unschedulable"]}, SimpleNamespace(pending_pods=3))
    notifier.flush()
    assert [r["text"] for r in received[3:]] == [
        ":warning: bob/huge cannot be scheduled: needs 32 nvidia.com/gpu"
    ]


def test_the_rate_limit_suppresses_and_then_summarizes(webhook):
    url, received = webhook
    clock = Minutes()
    notifier = SlackNotifier(url, per_minute=2, monotonic=clock)
    assert [notifier.send(f"m{i}") for i in range(5)] == [True, True, False, False, False]
    clock.t += 61
    assert notifier.send("later")
    notifier.flush()
    assert [r["text"] for r in received] == [
        "m0",
        "m1",
        "later\n(3 more messages suppressed by the rate limit)",
    ]


def test_a_bad_url_is_refused_and_a_dead_webhook_never_raises():
    with pytest.raises(ValueError, match="http"):
        SlackNotifier("file:///etc/passwd")
    notifier = SlackNotifier("http://127.0.0.1:9/nothing-listens", timeout_s=0.5)
    assert notifier.send("hello")
    notifier.flush()
