"""``kubectl exec`` and ``kubectl port-forward`` (kubectl 1.35, WebSocket to the API server) on a pod of the process
kubelet, through the real kube-apiserver 1.35, which speaks SPDY/3.1 to the kubelet's endpoint (server.py), which
proxies the upgraded connection to its streaming server (streaming.py, localcluster/go/kubelet-streaming). The
command runs as the pod's process runs (its working directory, environment and uid: compared with what the pod's
own process printed), its exit status is kubectl's, stdin passes through, and a forwarded port reaches a server the
pod listens with, on its pod IP or on 127.0.0.1 (a pod's own loopback, on a real node)."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from localcluster import binaries
from localcluster.processes import free_ports
from tests.localcluster.test_process_kubelet import _client_cert, _create, _pod, _until, node, process_node  # noqa: F401
from tests.support import require_tool, wait_until

pytestmark = pytest.mark.tool


@pytest.fixture(autouse=True)
def _streaming_built() -> None:
    """kubelet-streaming (`make tools`): skipped with the reason where it is not built, failed under CI=true."""
    require_tool("kubelet-streaming", str(binaries.BIN / "kubelet-streaming"))


PRINT = "import os, sys; print(os.getcwd(), os.environ['GREETING'], os.environ['HOSTNAME'], os.getuid(), flush=True)"


def _running(kube, ns: str, pod: dict) -> str:
    _create(kube, ns, pod)
    name = pod["metadata"]["name"]
    _until(kube, ns, name, lambda p: p["status"].get("phase") == "Running")
    return name


@pytest.fixture
def sleeper(kube, node):  # noqa: F811 (the fixture imported above)
    """A running pod whose process printed its working directory, environment and uid, then sleeps."""
    ns = kube.namespace("exec")
    pod = _pod(node, "sleeper", PRINT + "\nimport time; time.sleep(600)")
    pod["spec"]["containers"][0]["env"] = [{"name": "GREETING", "value": "hello from the pod"}]
    name = _running(kube, ns, pod)
    own = wait_until(lambda: kube.kubectl("-n", ns, "logs", name).stdout, 30, "the pod's own line")
    return ns, name, own


def test_exec_runs_as_the_pods_process_and_exits_with_the_commands_status(kube, sleeper) -> None:
    ns, name, own = sleeper
    done = kube.kubectl("-n", ns, "exec", name, "--", "python", "-c",
                        PRINT + "\nprint('to stderr', file=sys.stderr); sys.exit(3)")  # fmt: skip
    assert done.stdout == own  # the same cwd, env (the pod's env and HOSTNAME) and uid as the pod's process
    assert done.returncode == 3  # kubectl exec exits with the command's status
    assert done.stderr == "to stderr\ncommand terminated with exit code 3\n"
    ok = kube.kubectl("-n", ns, "exec", name, "-c", "main", "--", "sh", "-c", "echo $GREETING; exit 0")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "hello from the pod\n", "")
    piped = kube.kubectl("-n", ns, "exec", "-i", name, "--", "python", "-c",
                         "import sys; print(sys.stdin.read().upper(), end='')", input="line one\nline two\n")  # fmt: skip
    assert (piped.returncode, piped.stdout) == (0, "LINE ONE\nLINE TWO\n")


def test_exec_into_what_is_not_there_is_one_clear_error(kube, sleeper) -> None:
    ns, name, _ = sleeper
    for args, words in [
        (("exec", "nopod", "--", "true"), 'Error from server (NotFound): pods "nopod" not found\n'),
        (("exec", name, "-c", "nope", "--", "true"), f"container nope is not valid for pod {name}"),
        (("exec", name, "--", "no-such-command"), 'exec: "no-such-command": executable file not found in $PATH'),
    ]:  # fmt: skip
        done = kube.kubectl("-n", ns, *args)
        assert done.returncode == 1 and words in done.stderr and done.stderr.count("\n") == 1, done.stderr


SERVE = """import http.server, os, threading
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{os.environ['HOSTNAME']} on {self.server.server_address[0]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
for address, port in ((os.environ["POD_IP"], 8080), ("127.0.0.1", %d)):
    server = http.server.ThreadingHTTPServer((address, port), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
print("serving", flush=True)
threading.Event().wait()
"""


@pytest.fixture
def node_and_kubelet(kube):
    with process_node(kube) as (name, kubelet):
        yield name, kubelet


def _still_forwarding(kube, ns: str, name: str, kubelet, uid: str) -> str:
    """What held a port-forward open after its pod's deletion: the pod as the API server has it, the kubelet's run
    of it and the forwards the streaming server still holds (the assertion's message, for a failure under load)."""
    got = kube.kubectl("-n", ns, "get", "pod", name, "-o", "json")
    pod = json.loads(got.stdout) if got.returncode == 0 else None
    seen = (
        f"deletionTimestamp={pod['metadata'].get('deletionTimestamp')} phase={pod['status'].get('phase')}"
        if pod
        else got.stderr.strip()
    )
    run = kubelet.pods.get(uid)
    ran = "no run" if run is None else f"alive={run.alive()} closed={run.closed} kill_at={run.kill_at}"
    opened = len(kubelet.streaming._open.get(uid, ()))
    log = kubelet.streaming.log
    tail = log.read_text()[-2000:] if log.exists() else "(no streaming log)"
    return (
        f"pod: {seen}; kubelet: {ran}, {opened} forward(s) open, {kubelet.errors} failed step(s); log: {tail}"
    )


def test_port_forward_reaches_the_pods_server_on_its_address_and_on_its_loopback(kube, node_and_kubelet):
    on, kubelet = node_and_kubelet
    ns = kube.namespace("forward")
    [loopback] = free_ports(1)
    pod = _pod(on, "web", SERVE % loopback, grace=1)
    pod["spec"]["containers"][0]["env"] = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    ]
    name = _running(kube, ns, pod)
    got = json.loads(kube.kubectl("-n", ns, "get", "pod", name, "-o", "json", check=True).stdout)
    pod_ip, uid = got["status"]["podIP"], got["metadata"]["uid"]
    wait_until(lambda: "serving" in kube.kubectl("-n", ns, "logs", name).stdout, 30, "the pod's servers")
    forward = subprocess.Popen(
        [str(binaries.path("kubectl")), "--kubeconfig", str(kube.admin_kubeconfig), "-n", ns, "port-forward",
         name, ":8080", f":{loopback}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        local: dict[int, int] = {}
        while len(local) < 2:
            line = forward.stdout.readline()
            assert line, forward.stderr.read()
            if m := re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line):
                local[int(m[2])] = int(m[1])
        for remote, answer in ((8080, f"web on {pod_ip}"), (loopback, "web on 127.0.0.1")):
            for _ in range(2):  # each request is a stream of its own on the one connection
                with urllib.request.urlopen(f"http://127.0.0.1:{local[remote]}/", timeout=10) as r:
                    assert r.read().decode() == answer
        # the pod's processes gone, its forwards end: kubectl port-forward stops, as on a real cluster
        kube.kubectl("-n", ns, "delete", "pod", name, "--wait=false", check=True)
        try:
            # kubectl notices at its 10-s ping; a loaded machine adds to that
            code = forward.wait(timeout=120)
        except subprocess.TimeoutExpired:
            raise AssertionError(_still_forwarding(kube, ns, name, kubelet, uid)) from None
        assert code == 1
        assert forward.stderr.read() == "error: lost connection to pod\n"
    finally:
        forward.terminate()
        forward.wait(timeout=10)
        forward.stdout.close()
        forward.stderr.close()


def test_exec_and_port_forward_on_the_endpoint_need_create_nodes_proxy(kube, node, tmp_path) -> None:  # noqa: F811
    """The kubelet's authorization of the stream paths: POST is ``create nodes/proxy`` (pkg/kubelet/server/auth.go),
    refused 403 to a user of the CA that RBAC does not let; the API server's client is let through to a 404."""
    got = json.loads(kube.kubectl("get", "node", node, "-o", "json", check=True).stdout)
    ip = next(a["address"] for a in got["status"]["addresses"] if a["type"] == "InternalIP")
    port = got["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]

    def post(path: str, cert: tuple[str, str]) -> tuple[int, str]:
        ctx = ssl.create_default_context(cafile=str(kube.workdir / "pki" / "ca.crt"))
        ctx.load_cert_chain(*cert)
        req = urllib.request.Request(f"https://{ip}:{port}{path}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, context=ctx, timeout=10)
        return e.value.code, e.value.read().decode()

    nobody = _client_cert(kube, tmp_path, kube.unique("nobody"), None)
    admin = _client_cert(kube, tmp_path, "kube-apiserver-kubelet-client", "kubeadm:cluster-admins")
    for path in ("/exec/default/none/main?command=true&output=1", "/portForward/default/none"):
        code, text = post(path, nobody)
        assert code == 403 and "verb=create, resource=nodes, subresource=proxy" in text
        assert post(path, admin) == (404, 'pod "none" not found on this node\n')


def test_exec_with_a_terminal_gives_the_command_one(kube, sleeper) -> None:
    """``kubectl exec -it`` from a terminal (a pty here): the command's stdin and stdout are a terminal of the size
    kubectl sent, and its exit status comes back."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    ns, name, _ = sleeper
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))  # rows, columns
    script = "import os, sys; print(sys.stdin.isatty(), sys.stdout.isatty(), os.get_terminal_size().columns); sys.exit(4)"
    try:
        proc = subprocess.Popen(
            [str(binaries.path("kubectl")), "--kubeconfig", str(kube.admin_kubeconfig), "-n", ns, "exec", "-it",
             name, "--", "python", "-c", script], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)  # fmt: skip
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: kubectl, the terminal's last holder, is gone
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=30) == 4
    finally:
        os.close(master)
    assert out.decode() == "True True 101\r\ncommand terminated with exit code 4\r\n"


def test_a_commands_processes_end_with_the_pod(kube, sleeper) -> None:
    """As an exec's processes go with their container: the pod deleted, the command (its whole session) is killed
    and ``kubectl exec`` ends with 137, as for a command a container runtime killed."""
    import os

    ns, name, _ = sleeper
    script = "import os, subprocess, time; child = subprocess.Popen(['sleep', '600']); print(os.getpid(), child.pid, flush=True); time.sleep(600)"
    proc = subprocess.Popen(
        [str(binaries.path("kubectl")), "--kubeconfig", str(kube.admin_kubeconfig), "-n", ns, "exec", name, "--",
         "python", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(os.path.exists(f"/proc/{p}") for p in pids)
        kube.kubectl("-n", ns, "delete", "pod", name, "--wait=false", check=True)
        assert proc.wait(timeout=60) == 137
        assert proc.stderr.read() == "command terminated with exit code 137\n"
        wait_until(
            lambda: not any(os.path.exists(f"/proc/{p}") for p in pids), 10, "the command's processes gone"
        )
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_the_kubelets_stop_ends_the_commands_it_runs(kube) -> None:
    """Stopping the process kubelet kills its pods' processes (agent.py) and the commands exec'd in them."""
    import os

    with process_node(kube) as (node_name, kubelet):
        ns = kube.namespace("stop")
        name = _running(kube, ns, _pod(node_name, "sleeper", "import time; time.sleep(600)"))
        script = "import os, time; print(os.getpid(), flush=True); time.sleep(600)"
        proc = subprocess.Popen(
            [str(binaries.path("kubectl")), "--kubeconfig", str(kube.admin_kubeconfig), "-n", ns, "exec", name,
             "--", "python", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        try:
            pid = int(proc.stdout.readline())
            assert os.path.exists(f"/proc/{pid}")
            kubelet.stop()
            wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 10, "the command killed")
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()


def test_a_command_whose_kubectl_is_gone_is_killed(kube, sleeper) -> None:
    """kubectl exec killed: kube-apiserver ends its SPDY connection to the kubelet (GOAWAY, then the close), and the
    command's session is killed, not left running on the host."""
    import os
    import signal

    ns, name, _ = sleeper
    script = "import os, time; print(os.getpid(), flush=True); time.sleep(600)"
    proc = subprocess.Popen(
        [str(binaries.path("kubectl")), "--kubeconfig", str(kube.admin_kubeconfig), "-n", ns, "exec", name, "--",
         "python", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    pid = 0
    try:
        pid = int(proc.stdout.readline())
        assert os.path.exists(f"/proc/{pid}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 30, "the command killed")
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if pid and os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGKILL)
