"""/metrics, /healthz and /readyz over HTTP on loopback."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from autoscaler import metrics


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def server():
    state = {"healthy": (True, "ok"), "ready": (False, "caches not synced")}
    srv, _ = metrics.serve(0, lambda: state["healthy"], lambda: state["ready"], host="127.0.0.1")
    yield f"http://127.0.0.1:{srv.server_address[1]}", state
    srv.shutdown()


def test_endpoints(server):
    url, state = server
    metrics.SCALE_UPS.labels("g", "us-west-2").inc(3)
    status, body = get(url + "/metrics")
    assert status == 200
    assert 'autoscaler_scale_up_nodes_total{group="g",region="us-west-2"}' in body
    assert "autoscaler_loop_duration_seconds_bucket" in body
    assert get(url + "/healthz") == (200, "ok\n")
    assert get(url + "/readyz") == (503, "caches not synced\n")
    state["ready"] = (True, "ok")
    assert get(url + "/readyz")[0] == 200
    assert get(url + "/nothing")[0] == 404
