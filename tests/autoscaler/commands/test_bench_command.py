"""`autoscaler bench` piped is never silent for long (issue 16: 48 s without a line): one progress line per step
on stderr, the figures on stdout."""

from __future__ import annotations

import argparse
import json

from autoscaler.commands import bench
from autoscaler.core import bench as core_bench
from autoscaler.core import bench_sizes


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


def _sizes(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    code = bench.run(parser.parse_args(["--no-cases", "--pods", "30", "--nodes", "3", *argv]))
    out, err = capsys.readouterr()
    return code, out, err


def test_real_sizes_with_a_baseline_report_every_figure_for_both_sizes(capsys):
    """Tiny sizes, the baseline being this very commit: the structure and that every figure is there (the
    figures themselves are printed by `invoke bench`, never asserted)."""
    code, out, err = _sizes(["--json", "--baseline", "HEAD"], capsys)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    rows = [x for x in lines if x["case"] == "real-sizes"]
    assert [(r["size"], r["code"].split()[0]) for r in rows] == [
        ("lean", "current"),
        ("lean", "baseline"),
        ("kubectl", "current"),
        ("kubectl", "baseline"),
    ]
    for r in rows:
        assert r["pending"] == 30 and r["nodes"] == 3 and r["pods"] == 39
        for f in ("process_wall_s", "process_cpu_s", "in_core_cold_s", "in_core_warm_s", "decode_s"):
            assert isinstance(r[f], float) and r[f] >= 0, f
        assert r["process_peak_mib"] > 0 and r["in_core_peak_mib"] >= r["decoded_mib"] > 0
        assert r["new_nodes"] > 0
    lean, sized = rows[0], rows[2]
    assert sized["pod_bytes"] > 20 * lean["pod_bytes"] and sized["node_bytes"] > 10 * lean["node_bytes"]
    assert len({r["plan_digest"] for r in rows} | {r["process_plan_digest"] for r in rows}) == 1
    ratios = [x for x in lines if x["case"] == "real-sizes-ratio"]
    assert [r["size"] for r in ratios] == ["lean", "kubectl"]
    assert all(isinstance(r["process_wall_s"], float) for r in ratios)
    assert "baseline" in err and "kubectl objects, current code" in err


def test_real_sizes_table_and_verdicts(capsys):
    code, out, _ = _sizes(["--repeat", "2"], capsys)
    assert code == 0
    assert "| lean | current | 39 (30) | 3 |" in out and "| kubectl | current | 39 (30) | 3 |" in out
    assert "kubectl objects, 30 pending pods: whole process" in out and "the 2 s target" in out
    assert "plans: the same scale-up in every run" in out
    assert out.count("| lean | current |") == 1  # two runs, one row: the least of each figure


def test_an_unknown_baseline_is_one_line_and_exit_2(capsys):
    code, out, err = _sizes(["--baseline", "no-such-ref-xyz"], capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (
        f"autoscaler bench: --baseline no-such-ref-xyz: not a commit of this repository ({bench_sizes.ROOT})"
    )
