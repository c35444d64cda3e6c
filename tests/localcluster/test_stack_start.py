"""The stack's start against ports taken between their draw and their bind (localcluster/stack.py): a component
that finds its port taken (etcd, the API server, the controller manager, the scheduler) fails the start with the
message the start looks for, and the start is made again on ports drawn again; the start returns only once the
controller manager and the scheduler listen on their own ports (``_wait_serving``); any other exit fails it with the
log; and a namespace that never gets its "default" ServiceAccount names the controller manager's state
(localcluster/shared.py). Stand-ins (data/fake_component.py) check the rule; the real binaries (the ``tool`` tests)
check that they fail as the rule expects."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from localcluster import kubeadm, stack
from localcluster.processes import free_ports
from localcluster.shared import Cluster

FAKE = Path(__file__).parent / "data" / "fake_component.py"


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """A Stack whose controller manager and scheduler are the stand-in, on ports drawn as start() draws them;
    ``start(env)`` starts them."""
    script = tmp_path / "fake-component"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    script.chmod(0o755)
    s = stack.Stack(tmp_path / "stack")
    s.ports = kubeadm.Ports(*free_ports(6))

    def start(env: dict | None = None) -> None:
        for name, field in stack.SERVING.items():
            s.processes.start(name, [str(script), f"--secure-port={getattr(s.ports, field)}"], env=env)

    yield s, start
    s.stop()


def _listening(port: int) -> bool:
    with socket.socket() as c:
        return c.connect_ex(("127.0.0.1", port)) == 0


def test_the_start_returns_once_both_listen_on_their_own_ports(fake) -> None:
    s, start = fake
    start()
    s._wait_serving(timeout_s=30)
    assert _listening(s.ports.controller_manager) and _listening(s.ports.scheduler)


def test_a_component_whose_port_was_taken_fails_the_start_with_what_the_retry_looks_for(fake) -> None:
    """The port listens, but not for the component: it is not taken for the component serving."""
    s, start = fake
    with socket.socket() as holder:  # another test of the run drew and bound it while the API server started
        holder.bind(("127.0.0.1", s.ports.controller_manager))
        holder.listen()
        start()
        with pytest.raises(
            RuntimeError, match="kube-controller-manager exited with 1: .*address already in use"
        ):
            s._wait_serving(timeout_s=30)


def test_a_component_that_exits_for_another_reason_fails_the_start_with_its_log(fake) -> None:
    s, start = fake
    start(env={"FAKE_FAIL": "unable to load client CA file"})
    with pytest.raises(RuntimeError, match="exited with 1: E1207 error: unable to load client CA file"):
        s._wait_serving(timeout_s=30)


def test_the_start_is_made_again_on_a_taken_port_only_and_at_most_port_retries_times(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(stack.binaries, "missing", lambda names: [])
    s = stack.Stack(tmp_path / "stack")
    taken = RuntimeError("etcd exited with 1: listen tcp 127.0.0.1:20000: bind: address already in use")
    tries: list[int] = []

    def failing(errors):
        def _start(timeout_s):
            tries.append(1)
            if errors:
                raise errors.pop(0)
            return s

        return _start

    monkeypatch.setattr(s, "_start", failing([taken, taken]))
    assert s.start() is s and len(tries) == 3
    tries.clear()
    monkeypatch.setattr(
        s, "_start", failing([stack.StackFailed("kube-apiserver not ready after 60 s"), taken])
    )
    with pytest.raises(stack.StackFailed, match="not ready"):
        s.start()
    assert len(tries) == 1
    tries.clear()
    monkeypatch.setattr(s, "_start", failing([taken] * (stack.PORT_RETRIES + 2)))
    with pytest.raises(RuntimeError, match="address already in use"):
        s.start()
    assert len(tries) == stack.PORT_RETRIES + 1


def test_a_namespace_without_its_service_account_names_the_controller_managers_state(tmp_path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kube-controller-manager.log").write_text(
        "I1207 starting\nE1207 failed to start: boom\n"
    )
    gone = subprocess.Popen(["true"])
    gone.wait()
    (tmp_path / "stack.json").write_text(json.dumps({"pids": {"kube-controller-manager": gone.pid}}))
    cluster = Cluster(tmp_path, "https://127.0.0.1:1", tmp_path / "admin.conf")
    assert cluster.controller_manager() == (
        f"the controller manager (pid {gone.pid}) has exited; its log ends: I1207 starting / E1207 failed to start: boom"
    )
    (tmp_path / "stack.json").write_text(json.dumps({"pids": {"kube-controller-manager": 1}}))
    assert cluster.controller_manager().startswith("the controller manager (pid 1) is running")


@pytest.mark.tool
@pytest.mark.parametrize("name", list(stack.SERVING))
def test_the_real_component_exits_on_a_taken_port_with_what_the_retry_looks_for(name, tmp_path) -> None:
    """The seam: the real binary, given a port someone else holds, exits at once with the message. It binds before
    it reads anything from the API server, so a kubeconfig naming a closed loopback port is enough."""
    if stack.binaries.missing((name,)):
        pytest.skip("the local cluster's binaries are not built (make tools)")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "none"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [str(stack.binaries.path(name)), f"--secure-port={port}", "--bind-address=127.0.0.1",
             *(f"--{k}={kubeconfig}" for k in ("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"))],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode != 0
    assert f"listen tcp 127.0.0.1:{port}: bind: address already in use" in done.stdout + done.stderr


@pytest.mark.tool
def test_a_stack_whose_api_servers_port_was_taken_comes_up_on_ports_drawn_again(
    monkeypatch, tmp_path
) -> None:
    """The seam with the real control plane: kube-apiserver exits on the first draw's port, held, with the message
    the retry looks for, and the second start, on ports drawn again, comes up."""
    if stack.binaries.missing(stack.binaries.CONTROL_PLANE):
        pytest.skip("the local cluster's binaries are not built (make tools)")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        draws = iter([[taken, *free_ports(5)]])
        monkeypatch.setattr(stack, "free_ports", lambda n: next(draws, None) or free_ports(n))
        s = stack.Stack(tmp_path / "stack", kwok=False)
        try:
            s.start()
            assert s.ports.api != taken
            assert "address already in use" in (s.workdir / "logs" / "kube-apiserver.log").read_text()
            assert s.kubectl("get", "--raw", "/readyz").stdout == "ok"
        finally:
            s.stop()
