"""The Kubernetes adapter's Events over HTTP against the real kube-apiserver (the run's shared control plane): what
the Event writer sends (a create, then a strategic merge PATCH of count and lastTimestamp for a repeat) is what the
API server accepts, and kubectl, an independent client, shows it."""

from __future__ import annotations

import json

import pytest

from autoscaler.adapters.kubernetes import STATUS_CONFIGMAP, KubeCluster, api_client
from tests.autoscaler import real_kube


@pytest.fixture
def ns(kube):
    yield from real_kube.own_namespace(kube, "events")


@pytest.fixture
def cluster(kube, ns):
    """The adapter writing its Events and status ConfigMap in the test's own namespace."""
    api = api_client(str(kube.admin_kubeconfig))
    c = real_kube.scope(KubeCluster(api, namespace=ns, page_size=2, watch_timeout_s=2), ns)
    yield c
    c.stop()
    api.close()


def submit(kube, ns: str, name: str) -> dict:
    """A pending pod of 16 GPUs (fits no node), as the API server returns it (its uid)."""
    body = json.dumps(real_kube.pod(name, ns, gpus=16))
    return json.loads(kube.kubectl("create", "-f", "-", "-o", "json", input=body, check=True).stdout)


def kubectl(kube, *args: str) -> str:
    return kube.kubectl("--request-timeout=10s", *args, check=True).stdout


def test_a_repeat_patches_the_event_and_kubectl_shows_its_count(kube, ns, cluster):
    p = submit(kube, ns, "job-0")
    for _ in range(3):
        cluster.record_event(
            p, "NotTriggerScaleUp", "pod didn't trigger scale-up: needs 16 nvidia.com/gpu", "Warning"
        )
        assert cluster.flush_events(10)
    [event] = real_kube.events_for(kube, ns, "job-0")
    assert event["count"] == 3 and cluster.events.written == {"create": 1, "patch": 2}
    assert event["involvedObject"]["uid"] == p["metadata"]["uid"]
    lines = kubectl(kube, "get", "events", "-n", ns, "-o", "wide").splitlines()
    header, row = lines[0], next(line for line in lines if "NotTriggerScaleUp" in line)
    assert row[header.index("COUNT") :].split()[0] == "3"
    described = kubectl(kube, "describe", "pod", "job-0", "-n", ns)
    assert "NotTriggerScaleUp" in described[described.index("Events:") :]


def test_group_events_are_on_the_status_configmap(kube, ns, cluster):
    cluster.write_status({"summary": "{}"})
    cluster.record_status_event("ScaledUpGroup", "Scale-up: setting group g8 size to 3 instead of 2 (max: 4)")
    assert cluster.flush_events(10)
    out = kubectl(kube, "describe", "configmap", STATUS_CONFIGMAP, "-n", ns)
    assert "ScaledUpGroup" in out[out.index("Events:") :], "kubectl finds it by the ConfigMap's uid"


def test_an_expired_event_is_created_again_with_its_count_carried_on(kube, ns, cluster):
    """The API server keeps an Event an hour (``--event-ttl``) after its last write and then drops it; a PATCH of
    one that is gone answers 404 and the writer creates it again (client-go recordEvent), its count carried on.
    The expiry is the Event deleted (an hour is not waited out here)."""
    p = submit(kube, ns, "job-0")

    def record() -> None:
        cluster.record_event(p, "NotTriggerScaleUp", "needs 16 nvidia.com/gpu", "Warning")
        assert cluster.flush_events(10)

    record()
    record()  # a patch
    [event] = real_kube.events_for(kube, ns, "job-0")
    assert event["count"] == 2 and cluster.events.written == {"create": 1, "patch": 1}
    kubectl(kube, "-n", ns, "delete", "event", event["metadata"]["name"])  # expired
    assert real_kube.events_for(kube, ns, "job-0") == []
    record()  # the patch finds it gone (404, not counted as written): created again, the count carried on
    [event] = real_kube.events_for(kube, ns, "job-0")
    assert event["count"] == 3 and cluster.events.written == {"create": 2, "patch": 1}
