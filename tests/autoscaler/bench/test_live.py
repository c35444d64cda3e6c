"""`python -m autoscaler.bench.live` on a tiny cluster: the real controller process, the emulator with a write
latency, moto; the output's structure and that every figure is produced (never how fast: figures are printed by
`invoke bench-live`)."""

from __future__ import annotations

import json

import pytest

from autoscaler.bench import live as bench_live


def test_tiny_run_reports_memory_and_decision_latency(capsys):
    argv = ["--nodes", "3", "--pods", "9", "--loops", "2", "--samples", "1", "--events", "5", "--json"]
    assert bench_live.main(argv) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["options"]["write_latency_ms"] == 5.0 and result["options"]["events"] == 5
    (run,) = result["runs"]
    assert run["code"] == "current" and run["loops"] >= 2
    assert 0 < run["rss_start_mib"] <= run["rss_max_mib"] and run["rss_end_mib"] <= run["rss_max_mib"]
    assert len(run["latencies_s"]) + run["missed_samples"] == 1
    assert run["latencies_s"] and run["latencies_s"][0] > 0  # the pod reached AWS as a scaling call
    assert (
        run["events_per_burst"] and run["events_per_burst"][0] >= 1
    )  # the controller wrote the burst's Events
    assert "decision latency sample 1/1" in err
    text = bench_live.report(result)
    assert "| current | " in text and "targets: controller under 300 MB" in text


def test_steady_compares_the_end_with_the_middle():
    flat = [(n, 200.0 + (n % 3)) for n in range(100)]
    growing = [(n, 200.0 + n) for n in range(100)]
    assert bench_live.steady(flat, 100)["steady"] is True
    got = bench_live.steady(growing, 100)
    assert got["steady"] is False and got["growth"] > 0.2
    assert bench_live.steady(flat[:5], 5) is None  # too few passes to say


@pytest.mark.parametrize("argv", [["--write-latency-ms", "-1"], ["--loops", "0"], ["--nodes", "many"]])
def test_bad_options_are_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench_live.main(argv)
    assert e.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert "error: " in last and argv[0] in last
