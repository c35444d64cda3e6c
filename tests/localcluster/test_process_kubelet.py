"""The process kubelet (localcluster/kubelet/) as an agent of the real kube-apiserver: a pod of this repository's
images placed by kube-scheduler on its node runs as a process and ends with its exit code, a crash-looping pod
shows CrashLoopBackOff with a growing back-off, ``kubectl logs`` (``-c`` for an init container, ``--previous``,
``--tail``, ``-f``) reaches its endpoint through the API server, deletion kills the process, and a pod whose image
it cannot run is shown Running without one."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import time

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from localcluster.kubelet.agent import LABEL, VALUE, ProcessKubelet
from localcluster.kubelet.images import open_folder
from tests.support import require_standard_venv

pytestmark = pytest.mark.tool
INSTANCE = "localcluster.lab/kubelet-instance"
IMAGE = "127.0.0.1:5000/lab/standard:test"  # the lab's standard image (any registry): its venv runs here


@pytest.fixture
def node(kube):
    """A Node of this test owned by a process kubelet of its own (a narrower selector, so that the kubelets of
    parallel tests never take each other's nodes), tainted so that only this test's pods go there."""
    with process_node(kube) as (name, _):
        yield name


@contextlib.contextmanager
def process_node(kube):
    """The node of :func:`node` and its kubelet."""
    require_standard_venv()  # the pods run as uid 1000 on the standard image's venv, which every uid can run
    name = kube.unique("proc-node")
    ip = f"127.{random.randint(64, 95)}.{random.randint(0, 255)}.{random.randint(1, 254)}"
    body = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {LABEL: VALUE, INSTANCE: name, "kubernetes.io/hostname": name}},
        "spec": {"taints": [{"key": INSTANCE, "value": name, "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                   "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                   "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]},
    }  # fmt: skip
    kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
    root = open_folder("process-kubelet-")
    client = k8s_config.new_client_from_config(config_file=str(kube.admin_kubeconfig))
    kubelet = ProcessKubelet(client, root, selector=f"{LABEL}={VALUE},{INSTANCE}={name}").start()
    try:
        deadline = time.monotonic() + 60
        while not kube.kubectl("get", "node", name, "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}",
                               check=True).stdout.strip("0 "):  # fmt: skip
            assert time.monotonic() < deadline, "the process kubelet did not take its node in 60 s"
            time.sleep(0.2)
        yield name, kubelet
    finally:
        kubelet.stop()
        kube.kubectl("delete", "node", name, "--wait=false")
        shutil.rmtree(root, ignore_errors=True)


def _pod(
    node: str, name: str, script: str, policy: str = "Never", init: str | None = None, grace: int = 30
) -> dict:
    spec = {
        "restartPolicy": policy,
        "terminationGracePeriodSeconds": grace,
        "nodeSelector": {INSTANCE: node},
        "tolerations": [{"key": INSTANCE, "operator": "Equal", "value": node, "effect": "NoSchedule"}],
        "securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
        "containers": [{"name": "main", "image": IMAGE, "command": ["python", "-c", script]}],
    }
    if init is not None:
        spec["initContainers"] = [{"name": "deps", "image": IMAGE, "command": ["python", "-c", init]}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _create(kube, ns: str, pod: dict) -> None:
    kube.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(pod), check=True)


def _get(kube, ns: str, name: str) -> dict:
    return json.loads(kube.kubectl("-n", ns, "get", "pod", name, "-o", "json", check=True).stdout)


def _until(kube, ns: str, name: str, test, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        pod = _get(kube, ns, name)
        if test(pod):
            return pod
        assert time.monotonic() < deadline, json.dumps(pod.get("status"), indent=1)
        time.sleep(0.3)


def _main(pod: dict) -> dict:
    return next(s for s in pod["status"].get("containerStatuses") or () if s["name"] == "main")


def test_a_pod_runs_as_a_process_and_ends_with_its_exit_code_and_its_logs_reach_kubectl(kube, node) -> None:
    ns = kube.namespace("proc")
    _create(kube, ns, _pod(node, "ok", "import os; print('hello from', os.environ['HOSTNAME'], os.getuid())",
                           init="print('deps ready')"))  # fmt: skip
    _create(kube, ns, _pod(node, "bad", "import sys; print('failing'); sys.exit(3)"))
    ok = _until(kube, ns, "ok", lambda p: p["status"].get("phase") == "Succeeded")
    bad = _until(kube, ns, "bad", lambda p: p["status"].get("phase") == "Failed")
    assert ok["spec"]["nodeName"] == node  # placed by kube-scheduler
    assert _main(ok)["state"]["terminated"]["exitCode"] == 0
    assert ok["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    term = _main(bad)["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (3, "Error")
    for p in (ok, bad):
        assert p["status"]["podIP"].startswith("127.") and p["status"]["hostIP"].startswith("127.")
    conds = {c["type"]: c["status"] for c in ok["status"]["conditions"]}
    assert conds["Initialized"] == "True" and conds["Ready"] == "False"
    # `kubectl logs` through the API server, which dials the node's kubelet endpoint
    out = kube.kubectl("-n", ns, "logs", "ok", check=True).stdout
    assert out == f"hello from ok {1000 if os.geteuid() == 0 else os.geteuid()}\n"
    assert kube.kubectl("-n", ns, "logs", "ok", "-c", "deps", check=True).stdout == "deps ready\n"
    assert kube.kubectl("-n", ns, "logs", "bad", check=True).stdout == "failing\n"
    stamped = kube.kubectl("-n", ns, "logs", "bad", "--timestamps", check=True).stdout
    assert stamped.endswith("Z failing\n") and stamped.startswith("20")
    wrong = kube.kubectl("-n", ns, "logs", "ok", "-c", "nope")
    assert wrong.returncode and "container nope is not valid for pod ok" in wrong.stderr
    node_obj = json.loads(kube.kubectl("get", "node", node, "-o", "json", check=True).stdout)
    assert node_obj["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    ready = {c["type"]: c["status"] for c in node_obj["status"]["conditions"]}
    assert ready["Ready"] == "True"
    lease = json.loads(
        kube.kubectl("-n", "kube-node-lease", "get", "lease", node, "-o", "json", check=True).stdout
    )
    assert lease["spec"]["holderIdentity"] == node


def test_a_crash_looping_pod_backs_off_10s_then_20s(kube, node) -> None:
    ns = kube.namespace("crash")
    _create(kube, ns, _pod(node, "crash", "import sys; print('boom'); sys.exit(1)", policy="Always"))

    def backing_off(window: str):
        def test(p: dict) -> bool:
            waiting = (
                _main(p)["state"].get("waiting") if p["status"].get("containerStatuses") else None
            ) or {}
            return waiting.get("reason") == "CrashLoopBackOff" and f"back-off {window} " in waiting.get(
                "message", ""
            )

        return test

    first = _until(kube, ns, "crash", backing_off("10s"))
    cs = _main(first)
    assert first["status"]["phase"] == "Running"
    assert cs["restartCount"] == 1  # the first exit restarted at once, the second waits 10 s
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    second = _until(kube, ns, "crash", backing_off("20s"), timeout_s=90)
    assert _main(second)["restartCount"] == 2
    assert kube.kubectl("-n", ns, "logs", "crash", "--previous", check=True).stdout == "boom\n"
    got = kube.kubectl("get", "pod", "crash", "-n", ns, "--no-headers", check=True).stdout
    assert "CrashLoopBackOff" in got


def test_follow_and_tail_stream_through_the_api_server(kube, node) -> None:
    ns = kube.namespace("follow")
    script = "import time\nfor i in range(6):\n    print('line', i, flush=True)\n    time.sleep(0.3)"
    _create(kube, ns, _pod(node, "talk", script))
    _until(kube, ns, "talk", lambda p: p["status"].get("phase") in ("Running", "Succeeded"))
    followed = kube.kubectl("-n", ns, "logs", "-f", "talk", check=True, timeout=60).stdout
    assert followed == "".join(f"line {i}\n" for i in range(6))
    assert kube.kubectl("-n", ns, "logs", "talk", "--tail=2", check=True).stdout == "line 4\nline 5\n"


def test_deletion_sends_sigterm_then_sigkill_after_the_grace_period_and_removes_the_pod(kube, node) -> None:
    ns = kube.namespace("del")
    polite = ("import os, signal, sys, time\n"
              "signal.signal(signal.SIGTERM, lambda *a: (print('bye', flush=True), sys.exit(0)))\n"
              "print(os.getpid(), flush=True)\nwhile True: time.sleep(0.1)")  # fmt: skip
    stubborn = ("import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "print(os.getpid(), flush=True)\nwhile True: time.sleep(0.1)")  # fmt: skip
    _create(kube, ns, _pod(node, "polite", polite, policy="Always"))
    _create(kube, ns, _pod(node, "stubborn", stubborn, policy="Always", grace=2))
    pids = {}
    for name in ("polite", "stubborn"):
        _until(kube, ns, name, lambda p: p["status"].get("phase") == "Running")
        deadline = time.monotonic() + 30
        while not (out := kube.kubectl("-n", ns, "logs", name).stdout.strip()):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        pids[name] = int(out.splitlines()[0])
        os.kill(pids[name], 0)  # running here
    t0 = time.monotonic()
    kube.kubectl("-n", ns, "delete", "pod", "polite", "stubborn", "--timeout=60s", check=True, timeout=90)
    waited = time.monotonic() - t0
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert waited >= 2  # the stubborn one outlived SIGTERM until its grace period ended
    assert kube.kubectl("-n", ns, "get", "pods", "-o", "name", check=True).stdout == ""


def test_a_pod_whose_image_cannot_run_here_is_shown_running_without_a_process(kube, node) -> None:
    ns = kube.namespace("pause")
    pod = _pod(node, "pause", "")
    pod["spec"]["containers"][0] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    _create(kube, ns, pod)
    got = _until(kube, ns, "pause", lambda p: p["status"].get("phase") == "Running")
    assert "running" in _main(got)["state"]
    assert kube.kubectl("-n", ns, "logs", "pause", check=True).stdout == ""
    kube.kubectl("-n", ns, "delete", "pod", "pause", "--timeout=30s", check=True)


def test_a_missing_secret_holds_the_container_until_it_exists_then_env_and_volumes_come_from_the_api(
    kube, node
) -> None:
    ns = kube.namespace("refs")
    script = ("import os\nprint(os.environ['TOKEN'], os.environ['POD'], "
              "open(os.environ['CONF'] + '/greeting').read(), flush=True)")  # fmt: skip
    pod = _pod(node, "refs", script)
    c = pod["spec"]["containers"][0]
    c["env"] = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "CONF", "value": "/etc/conf"}]  # fmt: skip
    c["volumeMounts"] = [{"name": "conf", "mountPath": "/etc/conf"}]
    pod["spec"]["volumes"] = [{"name": "conf", "configMap": {"name": "settings"}}]
    kube.kubectl("-n", ns, "create", "configmap", "settings", "--from-literal=greeting=hello", check=True)
    _create(kube, ns, pod)
    held = _until(
        kube,
        ns,
        "refs",
        lambda p: "waiting" in (_main(p)["state"] if p["status"].get("containerStatuses") else {}),
    )
    waiting = _main(held)["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'secret "creds" not found'}
    kube.kubectl("-n", ns, "create", "secret", "generic", "creds", "--from-literal=token=s3cr3t", check=True)
    _until(kube, ns, "refs", lambda p: p["status"].get("phase") == "Succeeded")
    assert kube.kubectl("-n", ns, "logs", "refs", check=True).stdout == "s3cr3t refs hello\n"


def _client_cert(kube, folder, cn: str, org: str | None) -> tuple[str, str]:
    """A client certificate of the cluster CA (as kubeadm signs the API server's kubelet client certificate)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pki = kube.workdir / "pki"
    ca_cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        names.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name(names)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # fmt: skip
    crt, pem = folder / f"{cn}.crt", folder / f"{cn}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))  # fmt: skip
    return str(crt), str(pem)


def test_the_kubelet_endpoint_serves_only_whom_the_api_server_authorizes(kube, node, tmp_path) -> None:
    """The seam the API server crosses: its kubelet client certificate is accepted (the logs tests above); a
    client without a certificate of the cluster CA fails the handshake; one of the CA whose user RBAC does not let
    get nodes/proxy is refused 403; and the serving certificate is the CA's, for the node's address."""
    import ssl
    import urllib.error
    import urllib.request

    got = json.loads(kube.kubectl("get", "node", node, "-o", "json", check=True).stdout)
    ip = next(a["address"] for a in got["status"]["addresses"] if a["type"] == "InternalIP")
    port = got["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    url = f"https://{ip}:{port}/containerLogs/default/none/main"

    def ctx(cert: tuple[str, str] | None) -> ssl.SSLContext:
        c = ssl.create_default_context(
            cafile=str(kube.workdir / "pki" / "ca.crt")
        )  # verifies the node's IP SAN
        if cert:
            c.load_cert_chain(*cert)
        return c

    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionResetError)):
        urllib.request.urlopen(url, context=ctx(None), timeout=10).read()
    nobody = _client_cert(kube, tmp_path, kube.unique("nobody"), None)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, context=ctx(nobody), timeout=10)
    assert refused.value.code == 403
    admin = _client_cert(kube, tmp_path, "kube-apiserver-kubelet-client", "kubeadm:cluster-admins")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(url, context=ctx(admin), timeout=10)
    assert missing.value.code == 404  # authorized; no such pod


def test_a_force_deleted_pod_has_its_process_killed(kube, node) -> None:
    ns = kube.namespace("force")
    script = "import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint(os.getpid(), flush=True)\ntime.sleep(600)"
    _create(kube, ns, _pod(node, "stuck", script, policy="Always"))
    _until(kube, ns, "stuck", lambda p: p["status"].get("phase") == "Running")
    deadline = time.monotonic() + 30
    while not (out := kube.kubectl("-n", ns, "logs", "stuck").stdout.strip()):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    pid = int(out)
    kube.kubectl("-n", ns, "delete", "pod", "stuck", "--force", "--grace-period=0", check=True)
    deadline = time.monotonic() + 30
    while True:  # gone from the API at once; the kubelet sees it go and kills what it started
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, f"process {pid} of a force-deleted pod still runs"
        time.sleep(0.2)


def test_the_projected_service_account_token_authenticates_the_pod_at_the_api_server(kube, node) -> None:
    """The seam of the token the kubelet projects (a TokenRequest bound to the pod): the pod reads it and the CA
    from its kube-api-access volume (the mount path in its env rewritten to the volume's folder) and reaches the
    API server at KUBERNETES_SERVICE_HOST/PORT, which says who it is."""
    ns = kube.namespace("token")
    script = (
        "import json, os, ssl, urllib.request\n"
        "d = os.environ['SA']\n"
        "ctx = ssl.create_default_context(cafile=d + '/ca.crt')\n"
        "url = f\"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"
        "/apis/authentication.k8s.io/v1/selfsubjectreviews\"\n"
        "body = json.dumps({'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}).encode()\n"
        "req = urllib.request.Request(url, body, {'Authorization': 'Bearer ' + open(d + '/token').read(),"
        " 'Content-Type': 'application/json'})\n"
        "info = json.load(urllib.request.urlopen(req, context=ctx))['status']['userInfo']\n"
        "print(info['username'], info['extra']['authentication.kubernetes.io/pod-name'][0], open(d + '/namespace').read())\n"
    )  # fmt: skip
    pod = _pod(node, "whoami", script)
    pod["spec"]["containers"][0]["env"] = [
        {"name": "SA", "value": "/var/run/secrets/kubernetes.io/serviceaccount"}
    ]
    _create(kube, ns, pod)
    done = _until(kube, ns, "whoami", lambda p: p["status"].get("phase") in ("Succeeded", "Failed"))
    out = kube.kubectl("-n", ns, "logs", "whoami", check=True).stdout
    assert done["status"]["phase"] == "Succeeded", out
    assert out == f"system:serviceaccount:{ns}:default whoami {ns}\n"


def test_an_idle_kubelet_waits_for_its_timers_and_a_busy_one_steps_often(tmp_path) -> None:
    """No pod with a process: the loop waits until the next lease renewal, at most IDLE_S (the watches wake it at
    once when a pod or node changes: the tests above start pods through that); a pod with a process: interval_s."""
    from localcluster.kubelet import agent

    clock = [100.0]
    kubelet = ProcessKubelet(k8s.ApiClient(), tmp_path, interval_s=0.25, clock=lambda: clock[0])
    assert kubelet.next_wait() == agent.IDLE_S
    kubelet.nodes["n"] = agent.NodeState("n", "127.0.0.2", server=None, lease_at=97.0, status_at=99.0)
    assert kubelet.next_wait() == agent.IDLE_S  # its lease is due in 7 s, later than IDLE_S
    clock[0] = 105.0
    assert kubelet.next_wait() == 2.0  # its lease is due in 2 s

    class Busy:
        kill_at, processes = None, True

        def alive(self) -> bool:
            return True

        def finished(self) -> bool:
            return False

    kubelet.node_informer._items = {"u2": {"metadata": {"name": "m", "uid": "u2"}}}  # listed, not taken yet
    assert kubelet.next_wait() == 0.25
    kubelet.node_informer._items = {}
    kubelet.pods["uid"] = Busy()
    assert kubelet.next_wait() == 0.25
