"""A watch from a resourceVersion the server has not reached gets kube-apiserver's answer (504 Timeout, cause
ResourceVersionTooLarge, after waiting up to 3 s: apimachinery errors.NewTooLargeResourceVersionError), and the
informer relists on it: after an API server restart with fresh (lower) resource versions, the caches follow the
new server instead of freezing."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from autoscaler.adapters.kubernetes import KubeCluster, api_client
from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group, pod


def test_a_watch_from_a_resource_version_not_reached_is_504_too_large(emu, tmp_path):
    api = api_client(str(emu.write_kubeconfig(tmp_path / "kc")))
    core = client.CoreV1Api(api)
    try:
        current = int(json.loads(core.list_node(_preload_content=False).data)["metadata"]["resourceVersion"])
        started = time.monotonic()
        with pytest.raises(ApiException) as e:
            core.list_node(watch=True, resource_version=str(current + 1000), _preload_content=False)
        body = json.loads(e.value.body)
        assert e.value.status == 504 and body["reason"] == "Timeout"
        assert body["message"] == f"Timeout: Too large resource version: {current + 1000}, current: {current}"
        assert body["details"]["causes"] == [
            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
        ]
        assert time.monotonic() - started >= 2.5, "the server waits for the version first (about 3 s)"
    finally:
        api.close()


def _model(start: float, pods: list[str]) -> ClusterModel:
    model = ClusterModel(VirtualClock(start=start), [group(desired=1)])
    with model.lock:
        for name in pods:
            model.submit_pod(pod(name))
    return model


def _workload(kube) -> set[str]:
    """The cached pods' names, less the node lifecycle's DaemonSet pods (kube-system)."""
    return {
        p["metadata"]["name"] for p in kube.list_pods() if p["metadata"].get("namespace") != "kube-system"
    }


def test_the_caches_follow_a_restarted_server_with_fresh_resource_versions(tmp_path):
    old = _model(1_767_225_600.0, [f"old-{i}" for i in range(30)])  # many changes: a high resourceVersion
    emu = Emulator(old).start()
    port, secure_port, pki = emu.port, emu.secure_port, emu.api.pki
    kubeconfig = str(emu.write_kubeconfig(tmp_path / "kc"))
    kube = KubeCluster(api_client(kubeconfig), namespace="kube-system", watch_timeout_s=5, silence_s=8)
    kube.start()
    try:
        assert kube.wait_synced(10)
        assert any(p["metadata"]["name"] == "old-0" for p in kube.list_pods())
        emu.stop()
        # the same address and cluster CA (a restarted API server keeps its PKI), versions from 1
        new = Emulator(
            _model(1_767_225_600.0, ["new-0"]), port=port, secure_port=secure_port, pki=pki
        ).start()
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if _workload(kube) == {"new-0"}:
                    break
                time.sleep(0.2)
            assert _workload(kube) == {"new-0"}
        finally:
            new.stop()
    finally:
        kube.stop()
