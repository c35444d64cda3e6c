"""The stack's start against ports taken between their draw and their bind (localcluster/stack.py): a stack whose
etcd or API server found its port taken starts again on ports drawn again; a controller manager or scheduler
whose port was taken is started again on a port drawn now (``_wait_serving``); any other exit fails the start with
its log; and a namespace that never gets its "default" ServiceAccount names the controller manager's state
(localcluster/shared.py). Stand-ins (data/fake_component.py) check the rule; the real binaries (the ``tool``
tests) check that they fail as the rule expects."""

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
    """A Stack whose components are the stand-in, with ports drawn as start() draws them."""
    script = tmp_path / "fake-component"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    script.chmod(0o755)
    monkeypatch.setattr(stack.binaries, "path", lambda name: script)
    s = stack.Stack(tmp_path / "stack")
    s.ports = kubeadm.Ports(*free_ports(6))
    commands = {
        name: [name, f"--secure-port={getattr(s.ports, field)}"] for name, field in stack.SERVING.items()
    }
    yield s, commands
    s.stop()


def _start(s: stack.Stack, commands: dict, env: dict | None = None) -> None:
    for name in stack.SERVING:
        s.processes.start(name, [str(stack.binaries.path(name)), *commands[name][1:]], env=env)


def _listening(port: int) -> bool:
    with socket.socket() as c:
        return c.connect_ex(("127.0.0.1", port)) == 0


def test_a_component_whose_port_was_taken_starts_again_on_a_port_drawn_now(fake) -> None:
    s, commands = fake
    taken = s.ports.controller_manager
    with socket.socket() as holder:  # another test of the run drew and bound it while the API server started
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        _start(s, commands)
        s._wait_serving(commands, {}, timeout_s=30)
    assert s.ports.controller_manager != taken
    assert _listening(s.ports.controller_manager) and _listening(s.ports.scheduler)
    assert f"--secure-port={s.ports.controller_manager}" in commands["kube-controller-manager"]
    assert "address already in use" in (s.workdir / "logs" / "kube-controller-manager.log").read_text()


def test_a_component_that_exits_for_another_reason_fails_the_start_with_its_log(fake) -> None:
    s, commands = fake
    _start(s, commands, env={"FAKE_FAIL": "unable to load client CA file"})
    with pytest.raises(stack.StackFailed, match="exited with 1: E1207 error: unable to load client CA file"):
        s._wait_serving(commands, {}, timeout_s=30)


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
def test_the_real_components_fail_on_a_taken_port_as_the_restarts_expect(monkeypatch, tmp_path) -> None:
    """The seam: the real kube-apiserver, kube-controller-manager and kube-scheduler, each given a port someone
    else holds, exit with the message the restarts look for, and the stack comes up: the first draw's API server
    port is held (the whole start is made again), then the second draw's controller manager and scheduler ports
    (those two are started again on ports drawn then)."""
    if stack.binaries.missing(stack.binaries.CONTROL_PLANE):
        pytest.skip("the local cluster's binaries are not built (make tools)")
    held = [socket.socket() for _ in range(3)]
    for h in held:
        h.bind(("127.0.0.1", 0))
        h.listen()
    api, kcm, sched = (h.getsockname()[1] for h in held)
    draws = iter([[api, *free_ports(5)], [*free_ports(4), kcm, sched]])
    real = stack.free_ports
    monkeypatch.setattr(stack, "free_ports", lambda n: next(draws, None) or real(n))
    s = stack.Stack(tmp_path / "stack", kwok=False)
    try:
        s.start()
        assert s.ports.api != api and s.ports.controller_manager != kcm and s.ports.scheduler != sched
        for name in ("kube-apiserver", *stack.SERVING):
            assert "address already in use" in (s.workdir / "logs" / f"{name}.log").read_text(), name
        assert s.kubectl("get", "--raw", "/readyz").stdout == "ok"
    finally:
        s.stop()
        for h in held:
            h.close()
