"""What ``invoke simulate`` prints: progress when its output is not a terminal, tables that fit 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from rich.console import Console

from simulator.simulate import SHOWN, figures_tables, main
from tests.support import ROOT

HERE = ROOT / "tests/simulator"
LINE = re.compile(
    r"^simulate \[\d+ s\] (?:(?P<running>[\w@-]+) \d+\.\d h of 2\.0 h \(\d+%, (?P<events>[\d,]+) events\); "
    r"(?P<done>\d)/2 policies done|(?P<finished>[\w@-]+) done \([\d,]+ events, 2\.0 h simulated\))$"
)

# Figures of the shape the Philly week gives (docs/benchmarks.md): long names, six-digit counts, money.
WEEK = {
    name: {
        "wait_p50_s": 0.0,
        "wait_p95_s": 1916.5,
        "wait_p99_s": 8861.2,
        "burst_to_running_max_s": 78120.0,
        "loops_to_request_burst_max": 12,
        "gpu_hours_provisioned": 96758.4,
        "gpu_hours_used": 16870.1,
        "cost_usd": 296323.35,
        "cost_committed_usd": 192610.18 if name.startswith("static") else None,
        "cost_over_bound": 7.76,
        "jobs_killed": 139,
        "jobs_finished": 3176,
        "api_calls": 491615,
    }
    for name in ("batch", "batch@default", "ca-ideal", "ca-ideal-protected", "target-tracking", "static-peak")
}


def _cells(text: str) -> set[str]:
    return {c.strip() for line in text.splitlines() for c in re.split(r"[│┃]", line) if c.strip()}


def test_a_piped_run_prints_periodic_progress_lines_on_stderr():
    env = dict(os.environ, AUTOSCALER_SIM_PROGRESS_S="0")  # every update (10 s by default)
    env.pop("COLUMNS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "invoke", "simulate", "--trace", str(HERE / "small_trace.csv"),
         "--policies", "batch,static-peak", "--workers", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert lines and all(matches), [line for line, m in zip(lines, matches, strict=True) if not m]
    running = [m for m in matches if m["running"]]
    assert len(running) >= 5 and running[0]["running"] == "batch" and running[0]["done"] == "0"
    assert [m["finished"] for m in matches if m["finished"]] == ["batch", "static-peak"]
    for policy in ("batch", "static-peak"):  # simulated time and events grow within a policy
        events = [int(m["events"].replace(",", "")) for m in running if m["running"] == policy]
        assert len(events) >= 2 and events == sorted(events) and events[-1] > events[0], policy
    assert "simulate [" not in proc.stdout and "small_trace.csv" in proc.stdout


def test_progress_lines_are_spaced_by_the_interval(capsys):
    main(trace=str(HERE / "small_trace.csv"), policies="batch,static-peak", workers=1, progress_every=3600)
    err = capsys.readouterr().err.splitlines()
    # the run takes far less than an hour: only the line per policy done
    assert [line.split("] ", 1)[1].split(" (")[0] for line in err] == ["batch done", "static-peak done"]


def test_the_table_fits_80_columns_without_cutting_a_cell():
    console = Console(width=80, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    tables = figures_tables("philly-week-2017-12-08.csv", WEEK, console)
    assert len(tables) > 1
    for table in tables:
        console.print(table)
    text = console.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    cells = _cells(text)
    for name in WEEK:
        assert name in cells
    for value in ("8,861.2", "296,323.35", "192,610.18", "7.76", "139", "3,176", "491,615", "78,120.0"):
        assert value in cells, value
    for _, header in SHOWN:  # every column is shown, its header whole (it may wrap across lines)
        assert all(word in text for word in header.split()), header
    key = tables[0].columns
    headers = [c.header for c in key]  # the waits (p50, p95, p99) and the cost first, as many as fit
    want = ["wait p50 s", "p95 s", "p99 s", "cost $", "x bound", "killed", "finished"]
    assert headers[0] == "policy" and len(headers) >= 5 and headers[1:] == want[: len(headers) - 1]


def test_a_wide_console_gets_one_table():
    console = Console(width=250, file=open(os.devnull, "w"))  # noqa: SIM115
    assert len(figures_tables("week", WEEK, console)) == 1


def test_main_at_80_columns_prints_no_cut_cell(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    main(trace=str(HERE / "small_trace.csv"), policies="batch,ca-ideal-protected", workers=1)
    out = capsys.readouterr().out
    assert "…" not in out and "ca-ideal-protected" in _cells(out)
    assert max(len(line) for line in out.splitlines()) <= 80
