"""A resourceVersion the server has not reached (what a client holds after kube-apiserver restarted on a fresh
etcd, whose versions start again low), against the real kube-apiserver of the run's shared control plane: a list
from it is refused (504 ResourceVersionTooLarge) while a watch from it is taken and stays silent until its timeout,
and the informer, whose watches then end with nothing, relists so that its cache follows the server instead of
freezing while it looks current. (The emulator answered the watch 504, as it answered the list.)"""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from autoscaler.adapters.kubernetes import KubeCluster, api_client
from tests.autoscaler import real_kube
from tests.autoscaler.real_kube import wait_until


@pytest.fixture
def ns(kube):
    yield from real_kube.own_namespace(kube, "rv")


@pytest.fixture
def admin(kube):
    api = api_client(str(kube.admin_kubeconfig))
    yield api
    api.close()


def _ahead(core, namespace: str, by: int = 1_000_000) -> str:
    body = json.loads(core.list_namespaced_pod(namespace, _preload_content=False).data)
    return str(int(body["metadata"]["resourceVersion"]) + by)


def test_a_list_from_a_version_not_reached_is_504_and_a_watch_is_silent(ns, admin):
    core = client.CoreV1Api(admin)
    ahead = _ahead(core, ns)
    started = time.monotonic()
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod(ns, limit=1, resource_version=ahead, resource_version_match="NotOlderThan",
                                 _preload_content=False)  # fmt: skip
    body = json.loads(e.value.body)
    assert e.value.status == 504 and body["reason"] == "Timeout", body
    assert body["message"].startswith(f"Timeout: Too large resource version: {ahead}, current: "), body
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    assert time.monotonic() - started >= 2.5, "the server waits for the version first (about 3 s)"
    started = time.monotonic()
    resp = core.list_namespaced_pod(ns, watch=True, resource_version=ahead, allow_watch_bookmarks=True,
                                    timeout_seconds=4, _preload_content=False)  # fmt: skip
    assert resp.status == 200 and resp.data == b"", "taken, and not a line: no event, no bookmark, no error"
    assert time.monotonic() - started >= 3.5, "it lasted until its timeout"


def test_the_informer_relists_when_the_server_has_not_reached_its_version(kube, ns, admin):
    """The informer holding a version the server has not reached (as after a restart on fresh versions): its
    watches end with nothing, the check refuses the version, it relists, and the cache holds what the server does."""
    cluster = real_kube.scope(KubeCluster(admin, namespace=ns, watch_timeout_s=2, silence_s=8), ns)
    informer = cluster.informers["pods"]
    informer.sync()
    relists = informer.relists
    informer.resource_version = _ahead(cluster.core, ns)  # what the old server had reached
    real_kube.create(kube, real_kube.pod("new-0", ns))
    runner = threading.Thread(target=informer.run, kwargs={"backoff_s": 0.1}, daemon=True)
    runner.start()
    try:
        wait_until(lambda: informer.relists > relists and {p["metadata"]["name"] for p in informer.items()}
                   == {"new-0"}, 30, "a relist holding new-0")  # fmt: skip
    finally:
        informer.stop()
        runner.join(10)


def test_a_quiet_watch_at_a_version_the_server_has_is_confirmed_without_a_relist(ns, admin):
    cluster = real_kube.scope(KubeCluster(admin, namespace=ns, watch_timeout_s=2, silence_s=8), ns)
    informer = cluster.informers["pods"]
    informer.sync()
    relists = informer.relists
    time.sleep(0.5)
    started = time.monotonic()
    informer.watch_once()  # quiet: the test's namespace holds nothing; the server ends it after 2 s
    assert informer.relists == relists
    assert informer.age() <= time.monotonic() - started, "confirmed current as of the watch's start"
