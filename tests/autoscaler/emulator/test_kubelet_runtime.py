"""Pods of this repository's images run as local processes (autoscaler/emulator/kubelet.py), as the kubelet runs
containers: the image's ENTRYPOINT/CMD overridden by command/args with $(VAR) expansion
(kubecontainer.ExpandContainerCommandAndArgs), env from the downward API and service links
(kubelet_pods.go: getServiceEnvVarMap), workingDir, one folder per volume with the bound ServiceAccount token of
the projected kube-api-access volume, restartPolicy Never ending the pod with the exit code, the Job controller
counting it, and DELETE sending SIGTERM then SIGKILL after the grace period. Checked with kubectl (logs, get)."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.autoscaler.model.builders import group
from tests.support import require_standard_venv, require_tool

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/standard:1"  # the lab's standard image, its own registry
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
SCRIPT = """
import os, sys, pathlib
token = pathlib.Path(sys.argv[1]).read_text()
print("pod", os.environ["POD_NAME"], os.environ["MY_NS"], "node", os.environ["NODE"])
print("api", os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
print("greeting", sys.argv[2])
print("token", token.count("."))
pathlib.Path("out.txt").write_text("written")
print("cwd", os.getcwd().endswith("volumes/work"))
sys.exit(int(os.environ.get("CODE", "0")))
"""


@pytest.fixture
def emu(kubelet_root):
    require_standard_venv()
    model = ClusterModel(VirtualClock(start=1_767_225_600.0), [group(desired=1)])
    with Emulator(model, namespaces=("lab",), run_pods=kubelet_root) as e:
        yield e


def call(emu, method, path, body=None):
    reply = emu.api.handle(method, path, {}, "application/json", json.dumps(body).encode() if body else b"")
    return reply.status, reply.body


def pod(name, code=0, restart="Never", command=None):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "restartPolicy": restart, "tolerations": TOLERATE, "terminationGracePeriodSeconds": 1,
        "volumes": [{"name": "work", "emptyDir": {}}],
        "containers": [{"name": "main", "image": IMAGE, "workingDir": "/work",
                        "command": command or ["python", "-c", SCRIPT],
                        "args": ["/var/run/secrets/kubernetes.io/serviceaccount/token", "$(GREETING)"],
                        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
                        "env": [{"name": "GREETING", "value": "hello"}, {"name": "CODE", "value": str(code)},
                                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                {"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}}  # fmt: skip


def until(emu, name, phases, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with emu.model.lock:
            emu.model.advance(emu.model.now() + 1)
            p = emu.model.store.find("pods", "lab", name)
            if p is None and phases == ("gone",):
                return None
            if p is not None and p["status"].get("phase") in phases:
                return p
        time.sleep(0.1)
    raise AssertionError(f"{name} never reached {phases}: {p and p['status']}")


def test_a_pod_runs_as_a_process_with_env_args_volumes_and_token(emu, tmp_path) -> None:
    code, body = call(emu, "POST", "/api/v1/namespaces/lab/pods", pod("p0"))
    assert code == 201, body
    p = until(emu, "p0", ("Succeeded", "Failed"))
    assert p["status"]["phase"] == "Succeeded", p["status"]
    kubectl = require_tool("kubectl")
    kc = emu.write_kubeconfig(tmp_path / "kc")
    out = subprocess.run([kubectl, "--kubeconfig", str(kc), "-n", "lab", "logs", "p0"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
    node = p["spec"]["nodeName"]
    assert f"pod p0 lab node {node}" in out.stdout
    assert f"api 127.0.0.1 {emu.secure_port}" in out.stdout
    assert "greeting hello" in out.stdout and "token 2" in out.stdout and "cwd True" in out.stdout
    written = list(emu.model.runtime.root.glob("lab_p0_*/volumes/work/out.txt"))
    assert [f.read_text() for f in written] == ["written"]


def test_a_non_zero_exit_fails_the_pod_and_its_job(emu) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"backoffLimit": 0, "template": pod("x", code=3)}}  # fmt: skip
    job["spec"]["template"].pop("apiVersion"), job["spec"]["template"].pop("kind")
    job["spec"]["template"]["metadata"] = {}
    code, body = call(emu, "POST", "/apis/batch/v1/namespaces/lab/jobs", job)
    assert code == 201, body
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with emu.model.lock:
            emu.model.advance(emu.model.now() + 1)
            j = emu.model.store.get("jobs", "lab", "j")
            conds = {c["type"] for c in j["status"].get("conditions") or () if c["status"] == "True"}
        if "Failed" in conds:
            break
        time.sleep(0.1)
    assert "Failed" in conds and j["status"].get("failed") == 1, j["status"]
    with emu.model.lock:
        (p,) = emu.model.store.list("pods", "lab")
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"


def test_delete_stops_the_process_with_sigterm_then_goes(emu) -> None:
    sleeper = pod("s", restart="Always", command=["python", "-c", "import time; time.sleep(60)"])
    assert call(emu, "POST", "/api/v1/namespaces/lab/pods", sleeper)[0] == 201
    until(emu, "s", ("Running",))
    time.sleep(0.5)
    code, body = call(emu, "DELETE", "/api/v1/namespaces/lab/pods/s")
    assert code == 202 and body["metadata"].get("deletionTimestamp"), body  # handlers/delete.go: not yet gone
    assert until(emu, "s", ("gone",), timeout=10) is None


@pytest.mark.parametrize(
    "image", ["busybox:1.36", "123456789012.dkr.ecr.us-west-2.amazonaws.com/dlr/autoscaler:0.1.0"]
)
def test_other_images_stay_simulated(emu, image) -> None:
    """The autoscaler's own image too: its Deployment needs the in-cluster token path and AWS (issue 37)."""
    other = pod("o")
    other["spec"]["containers"][0]["image"] = image
    other["metadata"]["annotations"] = {"research.cluster/duration-s": "5"}
    assert call(emu, "POST", "/api/v1/namespaces/lab/pods", other)[0] == 201
    with emu.model.lock:
        emu.model.advance(emu.model.now() + 600)
        p = emu.model.store.get("pods", "lab", "o")
    assert p["status"]["phase"] == "Succeeded"
    assert emu.model.runtime._pods == {}


def test_a_crashing_container_backs_off_as_the_kubelet_does(emu) -> None:
    """restartPolicy Always and an exit at once: CrashLoopBackOff (10 s, doubling to 5 min), the exit in lastState;
    the runtime restarted it every second (1,016 restarts in 45 minutes of the local cluster, issue 37)."""
    from autoscaler.emulator.kubelet import backoff_s

    crasher = pod("c", restart="Always", command=["python", "-c", "raise SystemExit(2)"])
    assert call(emu, "POST", "/api/v1/namespaces/lab/pods", crasher)[0] == 201
    deadline, status = time.monotonic() + 20, {}
    while time.monotonic() < deadline and "waiting" not in status.get("state", {}):
        with emu.model.lock:
            emu.model.advance(emu.model.now() + 1)
            p = emu.model.store.find("pods", "lab", "c")
            status = ((p or {}).get("status", {}).get("containerStatuses") or [{}])[0]
        time.sleep(0.1)
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff", status
    assert status["lastState"]["terminated"]["exitCode"] == 2
    time.sleep(3)  # the old runtime had restarted it twice by now
    with emu.model.lock:
        status = emu.model.store.find("pods", "lab", "c")["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0 and "waiting" in status["state"], status
    assert [backoff_s(n, 0.0) for n in range(7)] == [10, 20, 40, 80, 160, 300, 300]
    assert backoff_s(6, 700.0) == 10  # ran long enough: the back-off starts over
