from __future__ import annotations

import os
import sys
import time

import pytest

from demos.autoscaler_demo.processes import Child, ChildError, Children

READY_THEN_SLEEP = (
    "import json, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(json.dumps({'url': 'x', 'grandchild': child.pid}), flush=True)\n"
    "time.sleep(60)\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for its parent is gone for our purpose
        return f.read().split()[2] != "Z"


def test_children_and_their_own_children_are_stopped(tmp_path):
    with Children() as children:
        child = children.start(Child("sleeper", [sys.executable, "-c", READY_THEN_SLEEP], tmp_path))
        grandchild = child.ready_line(30)["grandchild"]
        assert child.running() and _alive(grandchild)
    assert child.proc.returncode is not None
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:  # SIGKILL is delivered, not yet acted on
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_stopped_on_an_exception_too(tmp_path):
    with pytest.raises(KeyboardInterrupt), Children() as children:
        child = children.start(Child("sleeper", [sys.executable, "-c", READY_THEN_SLEEP], tmp_path))
        child.ready_line(30)
        raise KeyboardInterrupt
    assert child.proc.returncode is not None


def test_a_child_that_dies_before_ready_names_its_log(tmp_path):
    with Children() as children:
        child = children.start(Child("broken", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path))
        with pytest.raises(ChildError, match=r"broken exited with status 3; see .*broken\.log"):
            child.ready_line(30)
