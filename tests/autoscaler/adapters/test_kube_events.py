"""The Kubernetes adapter's Events over HTTP against the emulator: what the Event writer sends (a create, then a
strategic merge PATCH of count and lastTimestamp for a repeat) is what the API server accepts, and kubectl, an
independent client, shows it."""

from __future__ import annotations

import subprocess

import pytest

from autoscaler.adapters.kubernetes import STATUS_CONFIGMAP
from tests.autoscaler.model.builders import pod as model_pod
from tests.support import require_tool


@pytest.fixture
def kube(emu_kube):
    """The adapter on the emulator (tests/autoscaler/adapters/conftest.py), under the name these tests use."""
    return emu_kube


def submit(emu, pod: dict) -> dict:
    with emu.model.lock:
        return emu.model.submit_pod(pod)


def advance(emu, seconds: float) -> None:
    with emu.model.lock:
        emu.model.advance(emu.model.now() + seconds)


def kubectl(kubeconfig: str, *args: str) -> str:
    exe = require_tool("kubectl")
    proc = subprocess.run([exe, "--kubeconfig", kubeconfig, "--request-timeout=10s", *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def events(emu, name: str) -> list[dict]:
    with emu.model.lock:
        return emu.model.events_for("research", name)


@pytest.mark.tool
def test_a_repeat_patches_the_event_and_kubectl_shows_its_count(kube, emu, kubeconfig):
    p = submit(emu, model_pod("job-0", gpus=16))
    for _ in range(3):
        kube.record_event(
            p, "NotTriggerScaleUp", "pod didn't trigger scale-up: needs 16 nvidia.com/gpu", "Warning"
        )
        assert kube.flush_events(10)
    [event] = events(emu, "job-0")
    assert event["count"] == 3 and kube.events.written == {"create": 1, "patch": 2}
    assert event["involvedObject"]["uid"] == p["metadata"]["uid"]
    lines = kubectl(kubeconfig, "get", "events", "-n", "research", "-o", "wide").splitlines()
    header, row = lines[0], next(line for line in lines if "NotTriggerScaleUp" in line)
    assert row[header.index("COUNT") :].split()[0] == "3"
    described = kubectl(kubeconfig, "describe", "pod", "job-0", "-n", "research")
    assert "NotTriggerScaleUp" in described[described.index("Events:") :]


@pytest.mark.tool
def test_group_events_are_on_the_status_configmap(kube, emu, kubeconfig):
    kube.write_status({"summary": "{}"})
    kube.record_status_event("ScaledUpGroup", "Scale-up: setting group g8 size to 3 instead of 2 (max: 4)")
    assert kube.flush_events(10)
    out = kubectl(kubeconfig, "describe", "configmap", STATUS_CONFIGMAP, "-n", "kube-system")
    assert "ScaledUpGroup" in out[out.index("Events:") :], "kubectl finds it by the ConfigMap's uid"


def test_an_expired_event_is_created_again_and_a_patch_renews_its_ttl(kube, emu):
    """The API server keeps an Event an hour after its last write (registry/core/event: TTLFunc on create and
    update); a PATCH of one that expired answers 404 and the writer creates it again (client-go recordEvent)."""
    p = submit(emu, model_pod("job-0", gpus=16))

    def record() -> None:
        kube.record_event(p, "NotTriggerScaleUp", "needs 16 nvidia.com/gpu", "Warning")
        assert kube.flush_events(10)

    record()
    advance(emu, 3000)
    record()  # a patch: the Event lives another hour from now
    advance(emu, 3000)
    assert [e["count"] for e in events(emu, "job-0")] == [2]
    advance(emu, 700)
    assert events(emu, "job-0") == []
    record()  # the patch finds it gone: created again, with the count carried on
    [event] = events(emu, "job-0")
    assert event["count"] == 3 and kube.events.written == {"create": 2, "patch": 1}
