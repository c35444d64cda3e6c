"""`autoscaler bench` piped is never silent for long (issue 16: 48 s without a line): one progress line per step
on stderr, the figures on stdout."""

from __future__ import annotations

import argparse

from autoscaler.commands import bench
from autoscaler.core import bench as core_bench


def test_each_case_announces_itself_on_stderr(monkeypatch, capsys):
    tiny = [
        core_bench.Case("tiny-a", pods=20, shapes=2, nodes=3),
        core_bench.Case("tiny-b", pods=10, shapes=1, nodes=0),
    ]
    monkeypatch.setattr(core_bench, "CASES", tiny)
    assert bench.run(argparse.Namespace(json=True, no_process=True)) == 0
    out, err = capsys.readouterr()
    steps = [line.split("] ", 1)[1] for line in err.splitlines()]
    assert steps == ["case 1/2: tiny-a", "case 2/2: tiny-b", "done"]
    assert all(line.startswith("bench: [") for line in err.splitlines())
    assert [line.startswith('{"case": "tiny-') for line in out.splitlines()] == [True, True]
