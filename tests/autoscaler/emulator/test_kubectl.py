"""kubectl, a second independent client: get, cordon, drain through evictions."""

from __future__ import annotations

import json
import subprocess

import pytest

from autoscaler.model import ModelCluster
from tests.autoscaler.model.builders import pod
from tests.support import require_tool

pytestmark = pytest.mark.tool


@pytest.fixture
def kubectl(kubeconfig):
    exe = require_tool("kubectl")

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [exe, "--kubeconfig", kubeconfig, "--request-timeout=10s", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    return run


def _submit(emu, name: str, **kw) -> None:
    with emu.model.lock:
        emu.model.submit_pod(pod(name, **kw))


def test_get_nodes_and_pods_as_json(kubectl, emu):
    _submit(emu, "train", job="train")
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    with emu.model.lock:
        expected = sorted(n["metadata"]["name"] for n in emu.model.nodes())
    assert sorted(n["metadata"]["name"] for n in nodes) == expected
    assert all(n["spec"]["providerID"].startswith("aws:///us-west-2") for n in nodes)
    pods = json.loads(kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    assert {(p["metadata"]["namespace"], p["status"]["phase"]) for p in pods} == {
        ("research", "Running"),
        ("kube-system", "Running"),
    }
    one = json.loads(kubectl("get", "pod", "train", "-n", "research", "-o", "json").stdout)
    assert one["spec"]["nodeName"] in expected
    rows = [
        line.split() for line in kubectl("get", "pods", "-n", "research", "-o", "wide").stdout.splitlines()
    ]
    assert rows[0][:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows[1][:3] == ["train", "1/1", "Running"] and one["spec"]["nodeName"] in rows[1]


def test_cordon_and_uncordon(kubectl, emu):
    with emu.model.lock:
        name = emu.model.nodes()[0]["metadata"]["name"]
    kubectl("cordon", name)
    assert emu.model.node(name)["spec"]["unschedulable"] is True
    table = kubectl("get", "nodes").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[1] for line in table[1:] if line.startswith(name)] == ["Ready,SchedulingDisabled"]
    kubectl("uncordon", name)
    assert not emu.model.node(name)["spec"].get("unschedulable")


def test_drain_evicts_job_pods_and_leaves_daemonset_pods(kubectl, emu):
    _submit(emu, "train", job="train")
    node = emu.model.pod("research", "train")["spec"]["nodeName"]
    out = kubectl("drain", node, "--ignore-daemonsets", "--timeout=20s")
    assert "evicting pod research/train" in out.stderr + out.stdout
    with emu.model.lock:
        on_node = [p for p in emu.model.pods() if p["spec"].get("nodeName") == node]
        replacement = emu.model.pod("research", "train-r1")
    owners = sorted((p["metadata"]["ownerReferences"][0]["kind"], p["metadata"]["ownerReferences"][0]["name"])
                    for p in on_node)  # fmt: skip
    assert owners == [
        ("DaemonSet", "agent"),
        ("DaemonSet", "nvidia-device-plugin-daemonset"),
    ]  # DaemonSet pods stay
    assert replacement["spec"]["nodeName"] != node and replacement["status"]["phase"] == "Running"
    assert emu.model.stats.pods_evicted == 1 and emu.model.stats.jobs_killed == 0


def test_drain_respects_a_refusing_budget(kubectl, emu):
    _submit(emu, "guarded", labels={"app": "g"}, job="guarded")
    with emu.model.lock:
        emu.model.create(
            "poddisruptionbudgets",
            {
                "metadata": {"name": "g", "namespace": "research"},
                "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "g"}}},
            },
        )
    node = emu.model.pod("research", "guarded")["spec"]["nodeName"]
    out = kubectl("drain", node, "--ignore-daemonsets", "--timeout=2s", check=False)
    assert out.returncode != 0
    assert "disruption budget" in out.stderr
    assert emu.model.pod("research", "guarded")["status"]["phase"] == "Running"
    assert emu.model.stats.evictions_refused >= 1


def test_describe_pod_shows_the_autoscaler_events(kubectl, emu):
    _submit(emu, "huge", gpus=9)
    with emu.model.lock:
        ModelCluster(emu.model).record_event(
            emu.model.pod("research", "huge"), "NotTriggerScaleUp", "no group fits 9 GPUs", "Warning"
        )
    out = kubectl("describe", "pod", "huge", "-n", "research").stdout
    events = out[out.index("Events:") :]
    assert "NotTriggerScaleUp" in events and "no group fits 9 GPUs" in events


def test_node_status_changes_only_through_the_status_subresource(kubectl, emu):
    """As kube-apiserver's node strategy: a patch of the Node keeps its status; ``--subresource=status`` changes
    only the status (pkg/registry/core/node/strategy.go, PrepareForUpdate of both strategies)."""
    node = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"][0]["metadata"]["name"]
    cond = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}
    kubectl(
        "patch", "node", node, "--type=merge", "-p", json.dumps({**cond, "metadata": {"labels": {"x": "1"}}})
    )
    after = json.loads(kubectl("get", "node", node, "-o", "json").stdout)
    ready = {c["type"]: c["status"] for c in after["status"]["conditions"]}
    assert ready["Ready"] == "True" and after["metadata"]["labels"]["x"] == "1"
    kubectl("patch", "node", node, "--subresource=status", "--type=merge",
            "-p", json.dumps({**cond, "metadata": {"labels": {"x": "2"}}}))  # fmt: skip
    after = json.loads(kubectl("get", "node", node, "-o", "json").stdout)
    assert [c["status"] for c in after["status"]["conditions"] if c["type"] == "Ready"] == ["False"]
    assert after["metadata"]["labels"]["x"] == "1", "a status write changes nothing else"


def test_wide_tables_and_events_as_kubectl_prints_them(kubectl, emu):
    """The columns kube-apiserver's printers give (pkg/printers/internalversion/printers.go)."""
    _submit(emu, "huge", gpus=9)
    with emu.model.lock:
        ModelCluster(emu.model).record_event(
            emu.model.pod("research", "huge"), "NotTriggerScaleUp", "no group fits 9 GPUs", "Warning"
        )
    header = kubectl("get", "nodes", "-o", "wide").stdout.splitlines()[0].split()
    assert header == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE",
                      "KERNEL-VERSION", "CONTAINER-RUNTIME"]  # fmt: skip
    pods = kubectl("get", "pods", "-n", "research", "-o", "wide").stdout.splitlines()[0].split()
    assert pods[-6:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    lines = kubectl("get", "events", "-n", "research").stdout.splitlines()
    assert lines[0].split()[:6] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    row = next(line for line in lines if "NotTriggerScaleUp" in line)
    assert "Warning" in row and "pod/huge" in row and row.rstrip().endswith("no group fits 9 GPUs")
    wide = kubectl("get", "events", "-n", "research", "-o", "wide").stdout.splitlines()[0]
    assert "SUBOBJECT" in wide and "SOURCE" in wide and "FIRST SEEN" in wide and "COUNT" in wide


def test_server_side_apply_creates_then_updates(kubectl, emu, tmp_path):
    """``kubectl apply --server-side``: a PATCH with application/apply-patch+yaml creates a missing object (201)
    and merges into an existing one (field ownership is not modelled)."""
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: research}\n"
                    "data: {a: '1'}\n")  # fmt: skip
    out = kubectl("apply", "--server-side", "--validate=false", "-f", str(path)).stdout
    assert "serverside-applied" in out
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: research}\n"
                    "data: {a: '2', b: '3'}\n")  # fmt: skip
    kubectl("apply", "--server-side", "--validate=false", "-f", str(path))
    cm = json.loads(kubectl("get", "cm", "settings", "-n", "research", "-o", "json").stdout)
    assert cm["data"] == {"a": "2", "b": "3"}


def test_invalid_writes_are_refused_with_the_api_server_s_message(kubectl, emu):
    node = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"][0]["metadata"]["name"]
    proc = kubectl("patch", "node", node, "--type=merge", "-p", '{"metadata":{"labels":{"team":"bad value!"}}}',
                   check=False)  # fmt: skip
    assert proc.returncode != 0
    assert (
        f'The Node "{node}" is invalid: metadata.labels: Invalid value: "bad value!": a valid label must be an '
        "empty string or consist of alphanumeric characters"
    ) in proc.stderr


def test_an_invalid_taint_effect_sent_by_a_client_is_422_with_causes(emu, tmp_path):
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from autoscaler.adapters.kubernetes import api_client

    api = api_client(str(emu.write_kubeconfig(tmp_path / "kc")))
    core = client.CoreV1Api(api)
    node = core.list_node().items[0].metadata.name
    with pytest.raises(ApiException) as e:
        core.patch_node(node, {"spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}})
    body = json.loads(e.value.body)
    assert e.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        f'Node "{node}" is invalid: spec.taints[0].effect: Unsupported value: "Sometimes": supported values: '
        '"NoExecute", "NoSchedule", "PreferNoSchedule"'
    )
    assert body["details"]["causes"] == [{"reason": "FieldValueNotSupported", "field": "spec.taints[0].effect",
        "message": 'Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"'}]  # fmt: skip
    api.close()
