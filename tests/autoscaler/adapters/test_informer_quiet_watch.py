"""A watch that kube-apiserver established and that stayed quiet before it was cut confirms the cache as of when it
was established (kube-apiserver sends a bookmark about once a minute only: without this, watches cut every few
seconds leave a cache that misses nothing looking ever older; tests/faults's watch-cut scenario on the real API
server)."""

from __future__ import annotations

import json
import time

from urllib3.exceptions import ProtocolError

from autoscaler.adapters.informer import HEALTHY_WATCH_S, Informer


class _Resp:
    def __init__(self, data: bytes = b"", quiet_s: float = 0.0, cut: bool = False):
        self.data, self.quiet_s, self.cut, self.status = data, quiet_s, cut, 200

    def stream(self, amt=None, decode_content=False):
        time.sleep(self.quiet_s)
        if self.cut:
            raise ProtocolError("Connection broken: IncompleteRead")
        return iter(())

    def release_conn(self):
        pass

    def close(self):
        pass


def _informer(watch_quiet_s: float, answered: bool = True) -> tuple[Informer, list]:
    calls: list = []

    def list_pods(**kwargs):
        """:return: V1PodList"""
        calls.append(kwargs)
        if not kwargs.get("watch"):
            return _Resp(json.dumps({"items": [], "metadata": {"resourceVersion": "7"}}).encode())
        if not answered:
            time.sleep(watch_quiet_s)
            raise ProtocolError("Connection broken: no answer")
        return _Resp(quiet_s=watch_quiet_s, cut=True)

    return Informer("pods", list_pods, "Pod", "v1", lean_objects=False), calls


def _one_cut(informer: Informer) -> float:
    informer.sync()
    sent = time.monotonic()  # the fake answers at once: established when sent
    try:
        informer.watch_once()
    except ProtocolError:
        informer._quiet_watch_confirms()
    return sent


def test_a_quiet_watch_established_and_cut_confirms_the_cache_as_of_its_establishment():
    informer, _ = _informer(HEALTHY_WATCH_S + 0.3)
    informer._fresh_at = 0.0  # listed long ago
    sent = _one_cut(informer)
    assert informer.age() < time.monotonic() - sent + 0.05


def test_a_watch_cut_at_once_or_never_answered_confirms_nothing():
    for informer, _ in (_informer(0.05), _informer(HEALTHY_WATCH_S + 0.3, answered=False)):
        informer.sync()
        informer._fresh_at = time.monotonic() - 100.0
        try:
            informer.watch_once()
        except ProtocolError:
            informer._quiet_watch_confirms()
        assert informer.age() >= 100.0
