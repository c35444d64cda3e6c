"""`lab tensorboard` waits for its pod's address and makes the pod again when it goes away meanwhile (its node lost:
the pod garbage collector deletes it, as a run on the shared control plane showed: the read that followed was a raw
404 traceback), at most three times; then one clear line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from labctl.errors import LabError
from labctl.kube import Kube


class _Core:
    """The pod reads in the order given: 404 (none), a pod without an address, or one with ``ip``."""

    def __init__(self, reads: list) -> None:
        self.reads, self.created = list(reads), 0

    def read_namespaced_pod(self, name, namespace):
        what = self.reads.pop(0)
        if what == 404:
            raise ApiException(status=404, reason="Not Found")
        return SimpleNamespace(status=SimpleNamespace(pod_ip=what))

    def create_namespaced_pod(self, namespace, body):
        self.created += 1
        return SimpleNamespace(status=SimpleNamespace(pod_ip=None))


def _kube(reads: list) -> Kube:
    kube = Kube.__new__(Kube)
    kube.core = _Core(reads)
    job = SimpleNamespace(spec=SimpleNamespace(template=SimpleNamespace(spec=SimpleNamespace(
        containers=[SimpleNamespace(image="registry/dlr/standard@sha256:" + "0" * 64)]))))  # fmt: skip
    kube.get_job = lambda namespace, name: job
    kube.api_client = SimpleNamespace(sanitize_for_serialization=lambda o: {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "tb", "uid": "u-1"}})  # fmt: skip
    return kube


def test_a_pod_gone_with_its_node_is_made_again(monkeypatch) -> None:
    monkeypatch.setattr("labctl.kube.time.sleep", lambda s: None)
    kube = _kube([404, None, 404, None, "127.128.0.5"])
    assert kube.tensorboard("u-alice", "tb", None, 60, 2001) == "http://127.128.0.5:6006/"
    assert kube.core.created == 2


def test_a_pod_that_keeps_going_away_is_one_clear_line(monkeypatch) -> None:
    monkeypatch.setattr("labctl.kube.time.sleep", lambda s: None)
    kube = _kube([404, 404, 404, 404])
    with pytest.raises(LabError) as e:
        kube.tensorboard("u-alice", "tb", None, 60, 2001)
    assert str(e.value) == "TensorBoard pod tb-tb went away 3 times; see lab status"
