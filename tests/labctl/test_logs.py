"""`lab logs JOB` against the real pods/{name}/log: alice on the run's shared control plane (the ``alice`` fixture),
her job's pods bound to nodes of the test's own that a process kubelet of the test's own runs
(localcluster/kubelet/: the pods' processes, their logs served on its endpoint, which kube-apiserver dials). The
output of the job's pod, its last lines followed until the pod goes, the output of an init step (``container=deps``)
when that failed, and one line, not a traceback, while there is none to read.

The job's pods name the gang scheduler, which does not run on the shared control plane: the test binds them
(pods/binding), as the gang scheduler would, to its nodes, which a taint keeps every other test's pods off. The
commands are small scripts that print what torchrun's workers would (its ``[rankN]:`` prefixes): what lab reads is
the real log, the ranks are the script's."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from kubernetes import config as k8s_config

from labctl.cli import main
from tests.labctl.conftest import Alice, groups
from tests.support import require_standard_venv, wait_until

pytestmark = pytest.mark.tool
GROUP = "dlr-us-west-2-gpu-v100x8"  # the spec's first 8-GPU group (tests/labctl/test_scale_up.py)
OWNER = "test.research.cluster/logs-owner"  # the label and taint of the test's own nodes
JOB_NAME = "batch.kubernetes.io/job-name"


class Nodes:
    """Process-kubelet nodes of the spec's group ``GROUP`` (its labels, taints and 8 GPUs) of the test's own."""

    def __init__(self, alice: Alice):
        from localcluster.kubelet.agent import LABEL, VALUE, ProcessKubelet
        from localcluster.kubelet.images import open_folder

        require_standard_venv()  # the pods run as alice's uid on the standard image's venv
        self.alice, self.kube = alice, alice.kube
        self.tag = alice.namespace
        self.label = {LABEL: VALUE, OWNER: self.tag}
        self.root = open_folder("lab-logs-pods-")  # alice's uid enters it
        self.client = k8s_config.new_client_from_config(config_file=str(self.kube.admin_kubeconfig))
        self.kubelet = ProcessKubelet(self.client, self.root, selector=f"{LABEL}={VALUE},{OWNER}={self.tag}")
        self.kubelet.start()
        self.names: list[str] = []

    def add(self) -> str:
        from localcluster import nodes

        g = next(g for g in groups(self.alice.spec) if g["name"] == GROUP)
        body = nodes.node_body(g, self.kube.unique("i"), f"{g['region']}a", uninitialized=False)
        name = body["metadata"]["name"]
        body["metadata"]["labels"].update(self.label)
        body["spec"]["taints"].append({"key": OWNER, "value": self.tag, "effect": "NoSchedule"})
        for part in ("capacity", "allocatable"):
            body["status"][part]["nvidia.com/gpu"] = "8"
        del body["status"]["conditions"]  # the kubelet posts them
        self.kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
        self.names.append(name)
        wait_until(lambda: self.kube.kubectl("get", "node", name, "-o",
                                             "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}",
                                             check=True).stdout.strip("0 "),
                   60, f"the process kubelet serving node {name}")  # fmt: skip
        return name

    def close(self) -> None:
        self.kubelet.stop()
        for name in self.names:
            self.kube.kubectl("delete", "node", name, "--wait=false")
        self.client.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def nodes(alice):
    n = Nodes(alice)
    yield n
    n.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with no requirements (its deps step installs nothing)."""
    root = tmp_path / "proj"
    root.mkdir()
    return root


def _lab(lab_env, *argv: str) -> int:
    with pytest.raises(SystemExit) as e:
        main(["--kubeconfig", lab_env, *argv])
    return e.value.code


def _submit(lab_env, project: Path, name: str, script: str, *options: str) -> None:
    """``--gang`` even for one node: its pods name the gang scheduler, which no process runs here, so only the test
    binds them (a one-node job names kube-scheduler, which runs on the shared control plane and once bound the
    pod to another test's 8-GPU node first)."""
    (project / "train.py").write_text(script)
    assert _lab(lab_env, "submit", "--gpus", "8", "--gang", "--name", name, "--path", str(project), *options,
                "--", "python", "train.py") == 0  # fmt: skip


def _pods(alice: Alice, job: str, count: int = 1) -> list[dict]:
    """The job's pods by completion index, once the Job controller has made them all."""
    return wait_until(lambda: (lambda ps: sorted(ps, key=_index) if len(ps) == count else None)(
        alice.items("pods", f"{JOB_NAME}={job}")), 60, f"{count} pods of {job}")  # fmt: skip


def _index(pod: dict) -> int:
    return int(pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"])


def _bind(alice: Alice, pod: dict, node: str) -> None:
    """What the gang scheduler does with a placed pod: a Binding to ``node``."""
    name = pod["metadata"]["name"]
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
    done = alice.kubectl("create", "-f", "-", input=json.dumps(body), check=False)
    # on a loaded API server client-go may send the create again after a reply that timed out: the first one
    # bound the pod, the second gets 409 "already assigned" to that same node
    bound = ((alice.get("pod", name) or {}).get("spec") or {}).get("nodeName")
    assert done.returncode == 0 or bound == node, done.stderr


def _log(alice: Alice, pod: str) -> str:
    return alice.kubectl("logs", pod, "-c", "main", check=False).stdout


def _running(alice: Alice, job: str, nodes: Nodes, count: int = 1, until: str = "") -> list[str]:
    """The job's pods bound to ``count`` new nodes and their command started (its output holding ``until``)."""
    pods = _pods(alice, job, count)
    for pod in pods:
        _bind(alice, pod, nodes.add())
    names = [p["metadata"]["name"] for p in pods]
    for name in names:
        wait_until(lambda n=name: until in _log(alice, n) and _main_started(alice, n), 120,
                   f"{name}'s command started")  # fmt: skip
    return names


def _main_started(alice: Alice, name: str) -> bool:
    pod = alice.get("pod", name) or {}
    return any(cs["name"] == "main" and ("running" in cs["state"] or "terminated" in cs["state"])
               for cs in pod.get("status", {}).get("containerStatuses") or ())  # fmt: skip


def test_logs_before_the_pod_has_a_node_and_after_it_prints(alice, lab_env, nodes, project, capsys):
    _submit(lab_env, project, "resnet",
            "print('epoch 1 loss 0.9')\nprint('epoch 2 loss 0.4')\nimport time\ntime.sleep(600)\n")  # fmt: skip
    _pods(alice, "resnet")
    capsys.readouterr()
    assert _lab(lab_env, "logs", "resnet") == 2
    err = capsys.readouterr().err
    assert err == "lab: job 'resnet' has no output yet: not on a node yet; `lab status` shows where it is\n"
    [name] = _running(alice, "resnet", nodes, until="epoch 2")
    assert (alice.get("pod", name) or {})["status"]["phase"] == "Running"
    assert _lab(lab_env, "logs", "resnet") == 0
    assert capsys.readouterr().out == "epoch 1 loss 0.9\nepoch 2 loss 0.4\n"


def test_logs_follow_streams_until_the_job_is_cancelled(alice, lab_env, nodes, project, capsys):
    go = "import os, time\nwhile not os.path.exists(os.environ['LOG_DIR'] + '/go'):\n    time.sleep(0.1)\n"
    _submit(lab_env, project, "sweep", "print('step 1')\n" + go + "print('step 2')\ntime.sleep(600)\n")
    [name] = _running(alice, "sweep", nodes, until="step 1")
    capsys.readouterr()
    codes: list[int] = []
    follower = threading.Thread(target=lambda: codes.append(_lab(lab_env, "logs", "sweep", "-f")))
    follower.start()
    log_dir = nodes.root / "claims" / f"{alice.namespace}_results" / "sweep"
    wait_until(lambda: log_dir.is_dir(), 30, "the job's LOG_DIR")
    (log_dir / "go").write_text("")
    wait_until(lambda: "step 2" in _log(alice, name), 30, "step 2 printed")
    time.sleep(0.5)
    assert follower.is_alive()  # still following the running container
    assert _lab(lab_env, "cancel", "sweep") == 0
    follower.join(timeout=60)
    assert not follower.is_alive() and codes == [1]  # -f ends with the job's status: this one never finished
    out, err = capsys.readouterr()
    # the last line: `lab cancel`'s (it names the gang's PodGroup where the shared control plane has its CRD)
    assert out in (
        "step 1\nstep 2\ncancelled sweep: deleted job and its pods\n",
        "step 1\nstep 2\ncancelled sweep: deleted job, podgroup and its pods\n",
    )
    assert (
        err == "lab: job sweep: its pod is gone before the command ended (cancelled, or its node was lost)\n"
    )


class HeldIndex(http.server.ThreadingHTTPServer):
    """A package index on loopback that answers no request until released: pip in the deps step waits on it."""

    def __init__(self):
        self.release = threading.Event()
        self.asked = threading.Event()
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                index.asked.set()
                index.release.wait(120)
                self.send_error(404)

            def log_message(self, *_):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple/"

    def close(self):
        self.release.set()
        self.shutdown()
        self.server_close()


def test_logs_of_a_job_still_installing_its_requirements_is_one_line(alice, lab_env, nodes, project, capsys):
    """The pod is on its node, its deps step (an init container) still in pip: no output of the command yet."""
    index = HeldIndex()
    try:
        (project / "requirements.txt").write_text("tinydep==0.1\n")
        _submit(lab_env, project, "slow", "print('never')\n", "--env", f"PIP_INDEX_URL={index.url}")
        [pod] = _pods(alice, "slow")
        _bind(alice, pod, nodes.add())
        assert index.asked.wait(120), "pip of the deps step never asked the index"
        capsys.readouterr()
        assert _lab(lab_env, "logs", "slow") == 2
        err = capsys.readouterr().err
        assert (
            err
            == "lab: job 'slow' has no output yet: its deps step is running; `lab status` shows where it is\n"
        )
    finally:
        index.close()


def test_a_failed_deps_step_shows_its_own_output_read_from_the_init_container(alice, lab_env, nodes, project,
                                                                               capsys):  # fmt: skip
    """pods/log with ``container=deps`` (an init container) from the kubelet's endpoint: pip's own words."""
    (project / "requirements.txt").write_text("./wheels/tinydep-0.2-py3-none-any.whl\n")  # there is none
    _submit(lab_env, project, "typo", "print('never')\n")
    [pod] = _pods(alice, "typo")
    _bind(alice, pod, nodes.add())
    name = pod["metadata"]["name"]
    wait_until(lambda: any("terminated" in cs["state"] for cs in (alice.get("pod", name) or {}).get(
        "status", {}).get("initContainerStatuses") or () if cs["name"] == "deps"), 120, "the deps step ended")  # fmt: skip
    capsys.readouterr()
    assert _lab(lab_env, "logs", "typo") == 1
    out, err = capsys.readouterr()
    assert "lab: deps: pip install -r requirements.txt" in out and "tinydep-0.2-py3-none-any.whl" in out, out
    assert err == ("lab: job 'typo': its deps step (installing its requirements) failed with exit code 1 (Error) "
                   "before the command ran; its output is above\n")  # fmt: skip


RANKS = """import os, time
index = int(os.environ["NODE_RANK"])
print(f"[rank{%s[index]}]:step 1 loss {%s[index]}", flush=True)
time.sleep(600)
"""


def test_rank_0_is_the_pod_that_holds_rank_0_under_c10d(alice, lab_env, nodes, project, capsys):
    """Under c10d the rendezvous assigns node ranks: node index 1 may hold ranks 0-7. torchrun's [rankN]: prefixes
    (lab sets PET_TEE and the prefix template) say which pod that is."""
    _submit(lab_env, project, "elastic", RANKS % ("[8, 0]", "[2.0, 1.9]"), "--nodes", "2")
    _running(alice, "elastic", nodes, count=2, until="step 1")
    capsys.readouterr()
    assert _lab(lab_env, "logs", "elastic") == 0
    assert capsys.readouterr().out == "[rank0]:step 1 loss 1.9\n"
    assert _lab(lab_env, "logs", "elastic", "--index", "0") == 0
    assert capsys.readouterr().out == "[rank8]:step 1 loss 2.0\n"


ORDERED = """import os, time
index, box = int(os.environ["NODE_RANK"]), os.environ["LOG_DIR"]
def wait(name):
    while not os.path.exists(f"{box}/{name}"):
        time.sleep(0.05)
def say(line, name):
    print(line, flush=True)
    time.sleep(0.05)
    open(f"{box}/{name}", "w").close()
if index == 0:
    wait("ready-1")
    say("[rank0]:first", "first")
    wait("second")
    say("[rank0]:third", "third")
else:
    open(f"{box}/ready-1", "w").close()
    wait("first")
    say("[rank8]:second", "second")
time.sleep(600)
"""


def test_all_prefixes_every_line_with_its_node_in_time_order(alice, lab_env, nodes, project, capsys):
    _submit(lab_env, project, "both", ORDERED, "--nodes", "2")
    a, b = _running(alice, "both", nodes, count=2)
    wait_until(lambda: "third" in _log(alice, a), 60, "the third line")
    capsys.readouterr()
    assert _lab(lab_env, "logs", "both", "--all") == 0
    assert (
        capsys.readouterr().out == "[node 0] [rank0]:first\n[node 1] [rank8]:second\n[node 0] [rank0]:third\n"
    )


def _pod_exited(code: int, deleting: bool):
    from datetime import UTC, datetime

    from kubernetes import client as k8s

    state = k8s.V1ContainerState(terminated=k8s.V1ContainerStateTerminated(exit_code=code))
    status = k8s.V1ContainerStatus(
        name="main", state=state, image="i", image_id="", ready=False, restart_count=0
    )
    meta = k8s.V1ObjectMeta(name="p", deletion_timestamp=datetime.now(UTC) if deleting else None)
    return k8s.V1Pod(metadata=meta, status=k8s.V1PodStatus(container_statuses=[status]))


@pytest.mark.parametrize(("code", "deleting", "want"), [(143, True, 1), (137, False, 137), (0, True, 0)])
def test_a_command_stopped_by_its_pods_deletion_ends_as_gone(code, deleting, want) -> None:
    """`lab logs -f` of a job cancelled while it ran: the kubelet stops the command (SIGTERM: exit 143) and the pod
    may still be read before it goes (CI saw it). Its status is the gone pod's, whichever comes first; a command
    that ended by itself keeps its own exit code, a signal from elsewhere (the OOM killer's 137) too."""
    from types import SimpleNamespace

    from labctl.kube import Kube

    kube = object.__new__(Kube)
    kube.core = SimpleNamespace(read_namespaced_pod=lambda name, ns: _pod_exited(code, deleting))
    kube.exit_reason = None
    assert kube._wait_exit("ns", "p", timeout_s=1) == want
    assert (kube.exit_reason is not None) == (want == 1)
