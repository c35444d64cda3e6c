"""``--write-latency-ms`` / ``Emulator(write_latency_s=...)``: every write waits that long before it is handled, as a
real API server's admission and etcd round trip make it; reads and watches do not."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from autoscaler.emulator import Emulator, server
from autoscaler.model import ClusterModel, VirtualClock
from tests.support import ROOT

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {}}


def _call(url: str, method: str, body: dict | None = None, ctype: str = "application/json") -> int:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req) as r:
        r.read()
        return r.status


def test_writes_wait_and_reads_do_not(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(server.time, "sleep", slept.append)
    with Emulator(ClusterModel(VirtualClock()), write_latency_s=0.005) as emu:
        base = f"{emu.url}/api/v1/namespaces/default/configmaps"
        assert _call(base, "POST", CM) == 201
        assert _call(f"{base}/c", "GET") == 200
        assert _call(f"{base}/c", "PUT", CM | {"data": {"a": "1"}}) == 200
        assert _call(f"{base}/c", "PATCH", {"data": {"b": "2"}}, "application/merge-patch+json") == 200
        assert _call(base, "GET") == 200
        assert _call(f"{base}/c", "DELETE") == 200
    assert slept == [0.005] * 4  # POST, PUT, PATCH, DELETE


def test_no_latency_by_default(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(server.time, "sleep", slept.append)
    with Emulator(ClusterModel(VirtualClock())) as emu:
        assert _call(f"{emu.url}/api/v1/namespaces/default/configmaps", "POST", CM) == 201
    assert slept == []


def test_command_line_option_delays_writes():
    proc = subprocess.Popen([sys.executable, "-m", "autoscaler.emulator", "--write-latency-ms", "300",
                             "--insecure-port", "0"], stdout=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    try:
        url = json.loads(proc.stdout.readline())["insecure_url"]
        t = time.monotonic()
        assert _call(f"{url}/api/v1/namespaces/default/configmaps", "POST", CM) == 201
        assert time.monotonic() - t >= 0.3  # a lower bound the sleep guarantees, not a speed figure
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


@pytest.mark.parametrize("value", ["-5", "x"])
def test_a_bad_latency_is_refused_with_one_line(value):
    out = subprocess.run([sys.executable, "-m", "autoscaler.emulator", "--write-latency-ms", value],
                         capture_output=True, text=True, cwd=ROOT, timeout=30)  # fmt: skip
    assert out.returncode == 2 and "--write-latency-ms" in out.stderr.splitlines()[-1]
    assert "Traceback" not in out.stderr
