"""The process kubelet's figures on a control plane of its own: ``python -m localcluster.kubelet.bench [--pods N]``.

Prints, for N pods of the standard image placed on one process kubelet node by ``spec.nodeName`` (the scheduler
left out, so the figures are the kubelet's): the node's Ready after it is created, each pod's Running and
Succeeded after it is created (median and worst), ``kubectl logs`` and ``kubectl exec`` through the API server
(median of N), ``kubectl port-forward`` to a pod's HTTP server (a request's round trip, a 64 MiB download), the CPU
the kubelet's process spends per second with N pods running, and ``kubectl delete`` of the N pods (SIGTERM
honoured at once). Figures, never assertions: the machine's load moves them."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from kubernetes import config as k8s_config

from localcluster.kubelet.agent import LABEL, VALUE, ProcessKubelet
from localcluster.kubelet.images import open_folder
from localcluster.stack import Stack

IMAGE = "127.0.0.1:5000/lab/standard:bench"


def _pod(node: str, name: str, script: str, policy: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "restartPolicy": policy, "terminationGracePeriodSeconds": 5,
                     "containers": [{"name": "main", "image": IMAGE, "command": ["python", "-c", script]}]}}  # fmt: skip


def _wait(
    stack: Stack, ns: str, names: list[str], test, t0: dict[str, float], timeout_s: float = 120
) -> list[float]:
    """Seconds from each pod's creation until ``test(pod)`` held (polled every 0.1 s)."""
    got: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
    while len(got) < len(names) and time.monotonic() < deadline:
        items = json.loads(stack.kubectl("-n", ns, "get", "pods", "-o", "json").stdout)["items"]
        now = time.monotonic()
        for p in items:
            if p["metadata"]["name"] in t0 and p["metadata"]["name"] not in got and test(p):
                got[p["metadata"]["name"]] = now - t0[p["metadata"]["name"]]
        time.sleep(0.1)
    if len(got) < len(names):
        raise SystemExit(f"bench: {len(names) - len(got)} pods never got there in {timeout_s:.0f} s")
    return list(got.values())


def _line(what: str, xs: list[float]) -> str:
    return f"  {what:<34} median {statistics.median(xs):6.2f} s   worst {max(xs):6.2f} s   (n={len(xs)})"


SERVE = """import http.server, os
BLOCK = b"x" * (1 << 20)
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        mib = int(self.path.strip("/") or 0)
        self.send_response(200)
        self.send_header("Content-Length", str(mib << 20))
        self.end_headers()
        for _ in range(mib):
            self.wfile.write(BLOCK)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer((os.environ["POD_IP"], 8080), Answer).serve_forever()
"""


def _port_forward(stack: Stack, node: str, n: int, mib: int = 64) -> None:
    """``kubectl port-forward`` to a pod's HTTP server: a small request's round trip (median of n) and the rate of
    a ``mib`` MiB download (kubectl, the API server, the kubelet's endpoint and kubelet-streaming on the way)."""
    import re
    import subprocess
    import urllib.request

    from localcluster import binaries

    pod = _pod(node, "web", SERVE, "Never")
    pod["spec"]["containers"][0]["env"] = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    ]
    stack.kubectl("-n", "bench", "create", "-f", "-", input=json.dumps(pod))
    _wait(stack, "bench", ["web"], lambda p: p["status"].get("phase") == "Running", {"web": time.monotonic()})
    forward = subprocess.Popen([str(binaries.path("kubectl")), "--kubeconfig", str(stack.admin_kubeconfig), "-n",
                                "bench", "port-forward", "web", ":8080"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        m = None
        while m is None:
            line = forward.stdout.readline() if forward.stdout else ""
            if not line:
                raise SystemExit("bench: kubectl port-forward ended before it forwarded")
            m = re.match(r"Forwarding from 127\.0\.0\.1:(\d+)", line)
        url = f"http://127.0.0.1:{m[1]}/"
        rounds = []
        for i in range(n + 1):
            t = time.monotonic()
            for _ in range(50):  # the server may not listen yet
                try:
                    with urllib.request.urlopen(url + "0", timeout=30) as r:
                        r.read()
                    break
                except OSError:
                    time.sleep(0.1)
            if i:  # the first waits for the server
                rounds.append(time.monotonic() - t)
        print(f"  port-forward: a request's round trip median {statistics.median(rounds) * 1000:6.1f} ms  "
              f"worst {max(rounds) * 1000:6.1f} ms  (n={len(rounds)})")  # fmt: skip
        t = time.monotonic()
        with urllib.request.urlopen(url + str(mib), timeout=120) as r:
            got = len(r.read())
        took = time.monotonic() - t
        assert got == mib << 20, got
        print(f"  port-forward: {mib} MiB download           {took:6.2f} s   ({mib / took:.1f} MiB/s)")
    finally:
        forward.terminate()
        forward.wait(timeout=10)
        if forward.stdout:
            forward.stdout.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m localcluster.kubelet.bench", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--pods", type=int, default=10, help="pods per figure (default 10)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kubelet-bench-"))
    root = open_folder("kubelet-bench-pods-")
    stack = Stack(work).start()
    kubelet = None
    try:
        print(f"control plane up in {stack.timings['started']:.1f} s")
        node = "bench-node"
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {LABEL: VALUE}},
                "status": {"capacity": {"cpu": "64", "memory": "256Gi", "pods": "250"},
                           "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"},
                           "addresses": [{"type": "InternalIP", "address": "127.31.0.1"}]}}  # fmt: skip
        client = k8s_config.new_client_from_config(config_file=str(stack.admin_kubeconfig))
        kubelet = ProcessKubelet(client, root).start()
        t = time.monotonic()
        stack.kubectl("create", "-f", "-", input=json.dumps(body))
        while "True" not in stack.kubectl("get", "node", node, "-o",
                                          "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout:  # fmt: skip
            time.sleep(0.05)
        print(
            f"  node Ready after created            {time.monotonic() - t:6.2f} s (serving certificate by CSR)"
        )
        stack.kubectl("create", "namespace", "bench")
        while stack.kubectl("-n", "bench", "get", "serviceaccount", "default", check=False).returncode:
            time.sleep(0.1)
        names = [f"short-{i}" for i in range(args.pods)]
        t0 = {}
        for n in names:
            t0[n] = time.monotonic()
            stack.kubectl(
                "-n", "bench", "create", "-f", "-", input=json.dumps(_pod(node, n, "print('done')", "Never"))
            )
        done = _wait(stack, "bench", names, lambda p: p["status"].get("phase") == "Succeeded", t0)
        print(_line("pod created -> Succeeded (exits)", done))
        longs = [f"long-{i}" for i in range(args.pods)]
        script = (
            "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\ntime.sleep(600)"
        )
        for n in longs:
            t0[n] = time.monotonic()
            stack.kubectl(
                "-n", "bench", "create", "-f", "-", input=json.dumps(_pod(node, n, script, "Always"))
            )
        running = _wait(stack, "bench", longs, lambda p: p["status"].get("phase") == "Running", t0)
        print(_line("pod created -> Running", running))
        rounds = []
        for n in names:
            t = time.monotonic()
            out = stack.kubectl("-n", "bench", "logs", n).stdout
            rounds.append(time.monotonic() - t)
            assert out == "done\n", out
        print(_line("kubectl logs (through the API server)", rounds))
        rounds = []
        for n in longs:
            t = time.monotonic()
            done_exec = stack.kubectl("-n", "bench", "exec", n, "--", "true")
            rounds.append(time.monotonic() - t)
            assert done_exec.returncode == 0, done_exec.stderr
        print(_line("kubectl exec (first: starts server)", rounds[:1]))
        print(_line("kubectl exec -- true (the others)", rounds[1:] or rounds))
        _port_forward(stack, node, args.pods)
        cpu0, t = time.process_time(), time.monotonic()
        time.sleep(10)
        share = (time.process_time() - cpu0) / (time.monotonic() - t)
        print(
            f"  kubelet CPU with {args.pods} pods running         {share * 100:6.1f} % of one core (over 10 s)"
        )
        t = time.monotonic()
        stack.kubectl("-n", "bench", "delete", "pods", "--all", "--timeout=120s")
        print(f"  kubectl delete of {2 * args.pods + 1} pods (SIGTERM)      {time.monotonic() - t:6.2f} s")
    finally:
        if kubelet is not None:
            kubelet.stop()
        stack.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
