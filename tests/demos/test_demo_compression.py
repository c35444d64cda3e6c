"""``invoke demo --compression N`` (``python -m demos.cluster --compression N``): the option's parsing, refused before
anything starts, and every conversion of the demo taking the run's compression instead of the default 60 (issue 33:
the waits to every pod Running agree with the simulator only where the stack keeps up with the model's clock)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from clusterspec.errors import UserError
from demos import cluster, phases, sim_vs_real
from demos.autoscaler_demo.events import Decision
from demos.autoscaler_demo.run import (
    COMPRESSION,
    DEADLINE_FLOOR_S,
    _print_summary,
    deadline_for,
    event_line,
    parse_compression,
    plan_lines,
    running_text,
)
from demos.autoscaler_demo.workload import waves
from tests.support import ROOT


@pytest.mark.parametrize(("value", "rate"), [(None, 60.0), ("", 60.0), ("15", 15.0), ("1", 1.0), (7.5, 7.5),
                                             ("120", 120.0), (" 30 ", 30.0)])  # fmt: skip
def test_a_number_of_at_least_one_is_the_runs_compression(value, rate) -> None:
    assert parse_compression(value) == rate
    assert parse_compression(None) == COMPRESSION


@pytest.mark.parametrize("value", ["fast", "0", "0.5", "-15", "nan", "inf", "1e999", "15x"])
def test_anything_else_is_one_line_naming_the_option(value) -> None:
    with pytest.raises(UserError) as e:
        parse_compression(value)
    assert e.value.exit_code == 2
    assert len(e.value.lines) == 1
    assert e.value.lines[0].startswith(f"--compression {value!r}: give the model seconds per wall second")
    assert "at least 1" in e.value.lines[0]


def test_a_bad_compression_exits_2_before_anything_starts(monkeypatch, capsys) -> None:
    def started(*args, **kwargs):
        raise AssertionError("the demo started")

    monkeypatch.setattr(cluster, "run_demo", started)
    monkeypatch.setattr(cluster, "load_spec", started)
    assert cluster.cli(["--compression", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert err.startswith(
        "--compression '0.5': give the model seconds per wall second, a number of at least 1"
    )


def test_the_runs_compression_reaches_the_demo_and_the_comparison(monkeypatch, tmp_path, capsys) -> None:
    """``main`` passes the parsed value to the demo and converts its wall seconds with it, not with 60."""
    seen = {}

    def run_demo(spec, out, *, cluster, compression):
        seen["demo"] = compression
        return {"group_nodes_seen": 50, "waves": {"a": 20.0, "b": 40.0, "c": 30.0}}

    def check(spec, nodes, waits, compression, scan_interval_s, decisions):
        seen["check"] = (waits, compression, decisions)
        return sim_vs_real.compare(nodes, waits, 52, [300.0, 600.0, 450.0], decisions, decisions)

    monkeypatch.setattr(cluster, "run_demo", run_demo)
    monkeypatch.setattr(sim_vs_real, "check", check)
    compared = cluster.main(None, str(tmp_path), "15")
    assert seen["demo"] == 15.0
    assert seen["check"] == ([300.0, 600.0, 450.0], 15.0, None)  # wall seconds times 15
    assert compared.agrees
    assert "simulator and real stack agree" in capsys.readouterr().out


def test_held_the_waits_fail_the_run_beyond_the_tolerance(monkeypatch, tmp_path) -> None:
    from demos.autoscaler_demo.run import DemoFailed

    monkeypatch.setattr(cluster, "run_demo", lambda spec, out, *, cluster, compression: {
        "group_nodes_seen": 50, "waves": {"a": 20.0, "b": 40.0, "c": 60.0}})  # fmt: skip
    monkeypatch.setattr(sim_vs_real, "check", lambda spec, nodes, waits, *a: sim_vs_real.compare(
        nodes, waits, 52, [300.0, 600.0, 380.0]))  # fmt: skip
    assert not cluster.main(None, str(tmp_path), 15).agrees  # printed, not held: the demo's default
    with pytest.raises(DemoFailed) as e:
        cluster.main(None, str(tmp_path), 15, hold=True)
    assert e.value.exit_code == 1
    assert (
        str(e.value)
        == "at 15x the simulator and the real stack disagree: burst 3: 380 s simulated, 900 s real"
    )


def test_the_waves_and_the_lines_run_on_the_runs_clock() -> None:
    plan = waves(15)
    assert [w.at_s * 15 for w in plan] == [w.at_s * 60 for w in waves()]  # the same model times
    assert plan[2].at_s == 64.0  # the sweep at model minute 16: 64 wall seconds at 15x (16 at 60x)
    assert "wave 3/3 at wall  64.0 s = model 16.0 min" in plan_lines(plan, 15)[2]
    assert running_text(1, 3, plan[0], 20.0, 15).endswith(
        "wall 20.0 s = model 5.0 min after it was submitted"
    )
    assert (
        event_line(Decision(8.0, "scale up g: 0 -> 6", "scale"), 15)
        == "wall   8.0 s = model  2.0 min  scale up g: 0 -> 6"
    )


def test_the_summary_says_the_runs_compression() -> None:
    out = io.StringIO()
    summary = {"waves": {w.title: 20.0 for w in waves(15)}, "gpus_by_region": {"us-east-1": 352}, "nodes_seen": 50,
               "nodes_seen_booting": 48, "nodes_seen_awaiting_gpus": 47, "scale_decisions": 9,
               "capacity_failures": 2, "pods": 61, "seconds": 120.0, "timeline": "t.png"}  # fmt: skip
    _print_summary(Console(file=out, width=200), summary, 15)
    assert "every pod running wall 20.0 s = model 5.0 min after submission" in out.getvalue()
    assert "wall 120 s = model 30.0 min (the model runs 15x the wall clock)" in out.getvalue()


def test_the_deadline_is_model_time_with_a_wall_floor() -> None:
    assert deadline_for(60) == 75.0  # the demo's deadline as it was
    assert deadline_for(15) == 300.0  # the same 75 model minutes
    assert deadline_for(600) == DEADLINE_FLOOR_S


def test_phases_convert_with_the_runs_compression() -> None:
    doc = {"pods": {"try-0": {"created": 100.0, "bound": 104.0, "running": 105.0}},
           "pod_nodes": {"try-0": "n1"}, "nodes": {"n1": {"registered": 102.0, "ready": 103.0, "gpus": 103.5}},
           "node_ids": {"n1": "i-1"}, "launched": {"i-1": 101.0}, "decisions": [100.5], "passes": [100.4]}  # fmt: skip
    assert phases.to_passes(doc, 15)[0] == pytest.approx(6.0)  # 0.4 wall s
    row = phases.burst_table(doc, {"try": ("try",)}, 15)[1].split()
    assert row[2:] == ["8", "15", "30", "45", "-", "52", "60", "75"]  # wall seconds after creation times 15


def test_the_simulator_replays_the_autoscaler_at_the_runs_compression() -> None:
    from clusterspec.loader import load_spec
    from simulator.runner import Run
    from simulator.scenarios import demo_scenario

    spec, factory = sim_vs_real.as_run(load_spec(), 15.0, 2)
    run = Run(demo_scenario(spec), spec, sim_vs_real.POLICY, factory)
    assert run.scan == 30.0  # the 2-s scan interval is 30 model seconds at 15x, 120 at 60x
    assert run.policy.batch_window == (15.0, 150.0, 1.5)
    assert spec.autoscaler.idle_threshold_s == round(load_spec().autoscaler.idle_threshold_s * 15)


def test_invoke_demo_refuses_a_bad_compression_with_one_line() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "invoke"), "demo", "--compression", "fast"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "--compression 'fast': give the model seconds per wall second, a number of at least 1 "
        "(default 60; 15 runs the demo four times slower)"
    )
    assert "embedded AWS" not in done.stdout  # nothing started


def test_invoke_sim_vs_real_refuses_a_bad_compression_before_anything_starts() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "invoke"), "sim-vs-real", "--compression", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "--compression '0': give the model seconds per wall second, a number of at least 1"
    )
    assert "embedded AWS" not in done.stdout
