from __future__ import annotations

import pytest

from simulator.traces import TraceError, load_trace, parse_trace
from tests.support import ROOT, load_yaml

HERE = ROOT / "tests/simulator"
CASES = load_yaml(HERE / "bad_traces.yaml")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_trace_gives_one_line_with_file_and_line(case):
    with pytest.raises(TraceError) as err:
        parse_trace(case["csv"].splitlines(keepends=True), "t.csv")
    assert len(err.value.lines) == 1
    assert case["expect"] in err.value.lines[0]
    assert "\n" not in err.value.lines[0]


def test_small_trace_parses_sorted_with_optional_columns():
    jobs = load_trace(HERE / "small_trace.csv")
    assert [j.submit_s for j in jobs] == sorted(j.submit_s for j in jobs)
    assert len(jobs) == 12
    with_cpu = [j for j in jobs if j.cpus is not None]
    assert with_cpu and with_cpu[0].cpus == 6 and with_cpu[0].memory_gib == 40
    assert all(j.cpus is None for j in jobs if j not in with_cpu)


def test_blank_lines_and_extra_columns_are_ignored():
    jobs = parse_trace(["submit_time_s,vc,gpus,duration_s\n", "\n", "3,abc,2,60\n"], "x.csv")
    assert [(j.submit_s, j.gpus, j.duration_s) for j in jobs] == [(3.0, 2, 60.0)]


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(TraceError, match=r"nope\.csv: cannot read the trace"):
        load_trace(tmp_path / "nope.csv")
