"""`python -m simulator.bench_model` replays a trace the package ships: it looked for the trace beside the
repository (../shared), where a fresh clone has none (issue 16)."""

from __future__ import annotations

from simulator import bench_model as bench
from simulator.traces import DATA_DIR, resolve_trace


def test_the_default_trace_is_the_shipped_philly_week():
    assert resolve_trace(bench.DEFAULT_TRACE) == DATA_DIR / "philly-week-2017-12-08.csv"
    assert resolve_trace(bench.DEFAULT_TRACE).is_file()
