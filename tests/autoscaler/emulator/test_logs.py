"""pods/{name}/log as kube-apiserver and the kubelet serve it (autoscaler/emulator/logs.py), read with the
official client, raw HTTP (status codes, content type, chunked follow) and kubectl, an independent client.
What the emulated containers print is written by the test, as a container's process would."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from kubernetes.client.exceptions import ApiException

from autoscaler.model.objects import creating_status
from tests.autoscaler.model.builders import pod
from tests.support import require_tool


def _pod(name: str, containers=("main",), **kw) -> dict:
    p = pod(name, **kw)
    main = p["spec"]["containers"][0]
    # the first container carries the requests, the others none (a sidecar)
    p["spec"]["containers"] = [main | {"name": containers[0]}] + [
        {"name": c, "image": "sidecar"} for c in containers[1:]
    ]
    p.update(apiVersion="v1", kind="Pod")
    return p


def _get(emu, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(emu.url + path, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def _message(body: str) -> str:
    return json.loads(body)["message"]


LOG = "/api/v1/namespaces/research/pods/{}/log"


def test_a_running_containers_output_with_tail_lines_and_timestamps(core, emu):
    core.create_namespaced_pod("research", _pod("train"))
    emu.api.logs.write(
        emu.api, "research", "train", "main", "epoch 1 loss 0.9\nepoch 2 loss 0.5\nepoch 3 loss 0.3"
    )
    assert (
        core.read_namespaced_pod_log("train", "research")
        == "epoch 1 loss 0.9\nepoch 2 loss 0.5\nepoch 3 loss 0.3\n"
    )
    assert core.read_namespaced_pod_log("train", "research", container="main", tail_lines=2) == (
        "epoch 2 loss 0.5\nepoch 3 loss 0.3\n"
    )
    assert core.read_namespaced_pod_log("train", "research", tail_lines=0) == ""
    status, ctype, body = _get(emu, LOG.format("train") + "?timestamps=true&limitBytes=40")
    assert status == 200 and ctype == "text/plain"
    stamp, _, text = body.partition(" ")
    assert stamp.startswith("2026-01-01T00:00:00.") and stamp.endswith("Z") and len(stamp) == 30
    assert len(body) == 40 and text == "epoch 1 l"  # limitBytes counts the stamps too


@pytest.mark.parametrize(
    "query,status,message",
    [
        ("", 400, "a container name must be specified for pod duo, choose one of: [main sidecar]"),
        ("?container=nope", 400, "container nope is not valid for pod duo"),
        ("?container=main&previous=true", 400, 'previous terminated container "main" in pod "duo" not found'),
        (
            "?container=main&tailLines=-1",
            422,
            'PodLogOptions "duo" is invalid: tailLines: Invalid value: -1: '
            "must be greater than or equal to 0",
        ),
        ("?container=main&tailLines=x", 400, 'strconv.ParseInt: parsing "x": invalid syntax'),
    ],
)
def test_refusals_are_the_api_servers(core, emu, query, status, message):
    core.create_namespaced_pod("research", _pod("duo", containers=("main", "sidecar")))
    got, ctype, body = _get(emu, LOG.format("duo") + query)
    assert (got, ctype, _message(body)) == (status, "application/json", message)


def test_a_pod_without_a_node_has_an_empty_log_and_a_deleted_one_none(core, emu):
    core.create_namespaced_pod("research", _pod("waits", gpus=64))  # no node has 64 GPUs: never scheduled
    assert core.read_namespaced_pod("waits", "research").spec.node_name is None
    assert _get(emu, LOG.format("waits")) == (200, "text/plain", "")
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod_log("gone", "research")
    assert e.value.status == 404 and json.loads(e.value.body)["message"] == 'pods "gone" not found'


def test_a_container_that_has_not_started_is_waiting(core, emu):
    core.create_namespaced_pod("research", _pod("creating"))
    node_name = core.read_namespaced_pod("creating", "research").spec.node_name
    with emu.model.lock:  # the model's status of a pod whose node's network is not ready yet
        stored = emu.model.store.find("pods", "research", "creating")
        node = emu.model.store.find("nodes", None, node_name)
        stored["status"] = creating_status(stored, node, "2026-01-01T00:00:00Z")
    got, _, body = _get(emu, LOG.format("creating"))
    assert (got, _message(body)) == (
        400,
        'container "main" in pod "creating" is waiting to start: ContainerCreating',
    )
    with pytest.raises(ValueError, match="has not started"):
        emu.api.logs.write(emu.api, "research", "creating", "main", "too early")


def test_follow_streams_new_lines_until_the_container_terminates(core, emu):
    core.create_namespaced_pod("research", _pod("live", duration=30))
    emu.api.logs.write(emu.api, "research", "live", "main", "starting")
    resp = core.read_namespaced_pod_log("live", "research", follow=True, _preload_content=False)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.extend(c.decode() for c in resp.stream()))
    reader.start()
    emu.api.logs.write(emu.api, "research", "live", "main", "step 100")
    deadline = time.monotonic() + 5
    while "step 100" not in "".join(got) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reader.is_alive()  # still following a running container
    with emu.model.lock:
        emu.model.advance(emu.model.now() + 30)  # the pod's 30 s run ends: Succeeded
    reader.join(timeout=5)
    assert not reader.is_alive()  # the stream ended with the container
    assert "".join(got) == "starting\nstep 100\n"
    resp.release_conn()


def test_kubectl_logs_reads_the_emulator(core, emu, kubeconfig):
    kubectl = require_tool("kubectl")
    core.create_namespaced_pod("research", _pod("kc", containers=("main", "sidecar")))
    emu.api.logs.write(emu.api, "research", "kc", "sidecar", "from the sidecar\nsecond line")

    def run(*argv):
        return subprocess.run([kubectl, "--kubeconfig", kubeconfig, "-n", "research", "logs", *argv],
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    assert run("kc", "-c", "sidecar", "--tail", "1").stdout == "second line\n"
    wrong = run("kc", "-c", "nope")
    assert wrong.returncode != 0 and "container nope is not valid for pod kc" in wrong.stderr
