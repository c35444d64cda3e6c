"""The CPU a process tree uses, from /proc (localcluster/cpu.py): the names of the table, a child's CPU counted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from localcluster import cpu


@pytest.mark.parametrize(
    ("argv", "name"),
    [(["/x/.cache/localcluster/bin/kube-apiserver", "--secure-port=1"], "kube-apiserver"),
     (["/x/bin/scheduler", "--config=out/gang-scheduler-config.yaml"], "gang scheduler (scheduler-plugins)"),
     (["/x/.venv/bin/python3", "-m", "autoscaler", "run", "--cluster-name", "dlr"], "autoscaler run"),
     (["/x/.venv/bin/python3", "-m", "localcluster.aws_server"], "localcluster.aws_server"),
     (["/x/.venv/bin/python3", ".venv/bin/invoke", "local-cluster"], "invoke local-cluster"),
     ([], "?")],
)  # fmt: skip
def test_a_process_is_named_for_what_it_is(argv, name) -> None:
    assert cpu.name(argv) == name


def test_a_child_that_burns_cpu_is_in_the_table_with_its_cpu_seconds() -> None:
    before = cpu.sample(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\nimport sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        while True:
            after = cpu.sample(os.getpid())
            if child.pid in after and after[child.pid].cpu_s >= 0.3:
                break
        rows = cpu.usage(before, after, 10.0)
        (mine,) = [u for u in rows if u.pid == child.pid]
        assert mine.cpu_s >= 0.3 and mine.percent == pytest.approx(10 * mine.cpu_s)
        assert rows == sorted(rows, key=lambda u: -u.cpu_s)
        lines = cpu.table(rows, 10.0)
        assert lines[-1].startswith(f"total ({len(rows)} processes, 10 s)")
    finally:
        child.communicate(b"")
