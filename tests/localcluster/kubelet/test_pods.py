"""A pod's containers on the process kubelet (localcluster/kubelet/pods.py), on a stepped clock: restarts under
each restartPolicy, CrashLoopBackOff's window (10 s doubling to 5 m, forgotten after 10 minutes of running), init
containers in order, and the status the kubelet writes for each."""

from __future__ import annotations

import time

import pytest

from localcluster.kubelet.backoff import Backoff
from localcluster.kubelet.containers import Spec
from localcluster.kubelet.pods import Box, PodRun, go_duration


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _pod(policy: str) -> dict:
    return {"metadata": {"uid": "u1", "namespace": "ns", "name": "p"}, "spec": {"restartPolicy": policy}}


def _box(name: str, script: str, tmp_path, init: bool = False) -> Box:
    cwd = tmp_path / name
    cwd.mkdir(exist_ok=True)
    return Box(
        name,
        "lab/standard:1",
        Spec(name, ["/bin/sh", "-c", script], {"PATH": "/usr/bin:/bin"}, str(cwd), None),
        init,
    )


def _settle(run: PodRun, until, timeout_s: float = 20.0) -> None:
    """Steps ``run`` until ``until()`` holds (the processes are real; only the back-off's clock is stepped)."""
    deadline = time.monotonic() + timeout_s
    while not until():
        assert time.monotonic() < deadline, run.status()
        run.step()
        time.sleep(0.01)


def _waiting(run: PodRun, name: str = "c") -> dict:
    return (
        next(s for s in run.status()["containerStatuses"] if s["name"] == name)["state"].get("waiting") or {}
    )


def test_a_crash_loop_waits_10s_doubling_to_5m_and_forgets_after_10_minutes_of_running(tmp_path) -> None:
    clock = Clock()
    box = _box("c", "echo run; exit 1", tmp_path)
    run = PodRun(_pod("Always"), tmp_path, [], [box], Backoff(clock=clock), "127.0.0.2", "127.128.0.2", clock)
    _settle(run, lambda: len(box.runs) == 2)  # the first exit restarts at once
    windows = []
    for _ in range(8):
        _settle(run, lambda: box.waiting is not None)
        status = run.status()
        cs = status["containerStatuses"][0]
        assert status["phase"] == "Running"
        assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert cs["lastState"]["terminated"]["exitCode"] == 1
        assert cs["restartCount"] == len(box.runs) - 1
        windows.append(cs["state"]["waiting"]["message"].split()[1])
        before = len(box.runs)
        clock.t += 1  # still inside the window: no restart
        run.step()
        assert len(box.runs) == before
        clock.t += Backoff().max_s
        _settle(run, lambda n=before: len(box.runs) == n + 1)
    assert windows == ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s", "5m0s"]
    # ran for more than twice the maximum since the last restart: its next exit restarts at once again
    clock.t += 2 * Backoff().max_s + 1
    before = len(box.runs)
    _settle(run, lambda: len(box.runs) == before + 1)
    assert box.waiting is None


@pytest.mark.parametrize(
    ("policy", "script", "phase", "runs"),
    [
        ("Never", "exit 3", "Failed", 1),
        ("OnFailure", "exit 0", "Succeeded", 1),
        ("Never", "exit 0", "Succeeded", 1),
    ],
)
def test_a_container_that_is_not_restarted_ends_the_pod_with_its_exit_code(
    tmp_path, policy, script, phase, runs
) -> None:
    clock = Clock()
    box = _box("c", script, tmp_path)
    run = PodRun(_pod(policy), tmp_path, [], [box], Backoff(clock=clock), "127.0.0.2", "127.128.0.2", clock)
    _settle(run, lambda: run.finished())
    status = run.status()
    assert status["phase"] == phase
    term = status["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == int(script.split()[1])
    assert term["reason"] == ("Completed" if term["exitCode"] == 0 else "Error")
    assert len(box.runs) == runs


def test_init_containers_run_in_order_before_the_containers_and_a_failed_one_is_retried(tmp_path) -> None:
    clock = Clock()
    flag = tmp_path / "second-try"
    first = _box("first", f"test -e {flag} || {{ touch {flag}; exit 1; }}", tmp_path, init=True)
    second = _box("second", "echo second", tmp_path, init=True)
    main = _box("main", "sleep 30", tmp_path)
    run = PodRun(_pod("Always"), tmp_path, [first, second], [main], Backoff(clock=clock), "127.0.0.2",
                 "127.128.0.2", clock)  # fmt: skip
    _settle(run, lambda: first.current is not None and first.current.poll())
    status = run.status()
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    init = {c["type"]: c for c in status["conditions"]}["Initialized"]
    assert (
        init["status"] == "False" and init["message"] == "containers with incomplete status: [first second]"
    )
    _settle(run, lambda: main.alive())
    assert [len(first.runs), len(second.runs)] == [2, 1]
    status = run.status()
    assert status["phase"] == "Running"
    assert [s["state"]["terminated"]["reason"] for s in status["initContainerStatuses"]] == ["Completed"] * 2
    assert status["initContainerStatuses"][0]["restartCount"] == 1
    run.terminate(5)
    _settle(run, lambda: not run.alive())
    assert run.status()["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 128 + 15


def test_a_failed_init_container_fails_a_pod_that_never_restarts(tmp_path) -> None:
    clock = Clock()
    init = _box("deps", "exit 2", tmp_path, init=True)
    main = _box("main", "echo never", tmp_path)
    run = PodRun(
        _pod("Never"), tmp_path, [init], [main], Backoff(clock=clock), "127.0.0.2", "127.128.0.2", clock
    )
    _settle(run, lambda: run.finished())
    status = run.status()
    assert status["phase"] == "Failed"
    assert status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 2
    assert main.runs == []


def test_a_process_that_ignores_sigterm_is_killed_after_its_grace_period(tmp_path) -> None:
    clock = Clock()
    box = _box("c", "trap '' TERM; echo up; while :; do sleep 0.05; done", tmp_path)
    run = PodRun(_pod("Always"), tmp_path, [], [box], Backoff(clock=clock), "127.0.0.2", "127.128.0.2", clock)
    _settle(run, lambda: box.alive() and box.current.log.read_text())
    run.terminate(30)
    run.step()
    time.sleep(0.3)
    assert box.alive()  # SIGTERM ignored, grace not over
    clock.t += 30
    _settle(run, lambda: not run.alive())
    assert box.current.exit_code == 128 + 9


def test_go_durations() -> None:
    assert [go_duration(s) for s in (10, 80, 300)] == ["10s", "1m20s", "5m0s"]
