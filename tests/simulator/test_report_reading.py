"""The report's killed-jobs chart, the explanation under each chart, and the note when two policies' curves
coincide (issue 16: batch and ca-ideal looked like one curve, and the headline difference, kills, had no chart)."""

from __future__ import annotations

import base64
import re

from clusterspec.loader import load_spec
from simulator.metrics import JobOutcome, RunRecord, Sample, summarize
from simulator.report import killed_overlaps, render, wait_overlaps
from simulator.scenarios import trace_scenario
from simulator.simulate import run_policy
from simulator.traces import Job
from tests.support import ROOT

HERE = ROOT / "tests/simulator"


def _record(name: str, waits: list[float], kills: dict[int, tuple[float, ...]] | None = None) -> RunRecord:
    rec = RunRecord(name, regions=("us-west-2",), end_s=7200)
    rec.samples = [Sample(0, 8, 0, 0, 8, 24.0, (0,)), Sample(300, 8, 8, 8, 8, 24.0, (8,))]
    for i, w in enumerate(waits):
        times = (kills or {}).get(i, ())
        rec.jobs[f"j{i}"] = JobOutcome(Job(f"j{i}", 0, 8, 600), w, w + 600, len(times), times)
    return rec


def _sections(text: str) -> dict[str, str]:
    """Each chart's heading -> the HTML from its heading to the next one."""
    parts = re.split(r"<h2>(.*?)</h2>", text)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_report_has_a_killed_jobs_chart_and_explains_every_chart():
    records = [
        _record("batch", [0, 30, 60, 300]),
        _record("ca-ideal", [0, 30, 900, 4000], {2: (1800.0,), 3: (600.0, 2400.0)}),
    ]
    text = render("Simulation", "trace", records, {r.policy: summarize(r, []) for r in records})
    sections = _sections(text)
    assert list(sections) == [
        "GPU demand and capacity over time",
        "Job wait time, cumulative distribution",
        "Jobs killed over time",
        "Cost and GPU-hours",
    ]
    for title, body in sections.items():
        img = re.search(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)">', body)
        assert img and img.group(1) == title
        assert base64.b64decode(img.group(2)).startswith(b"\x89PNG")
        how = re.search(r'<p class="how">(.+?)</p>', body)
        assert how and len(how.group(1).split(". ")) >= 2, title  # at least two sentences under each chart
    assert "share of jobs that did not wait" in sections["Job wait time, cumulative distribution"]
    assert (
        "Where the orange line rises above the shaded area, jobs wait"
        in sections["GPU demand and capacity over time"]
    )
    killed = sections["Jobs killed over time"]
    assert "A killed job restarts from scratch" in killed
    assert '<p class="overlap">batch killed no job: its line lies on zero.</p>' in killed


def test_policies_with_the_same_curves_are_named_under_the_chart():
    same = [0, 30, 60, 300]
    records = [_record("batch", same), _record("ca-ideal", same), _record("static-peak", [0, 0, 0, 5000])]
    records[2].samples = [Sample(0, 8, 8, 16, 16, 48.0, (16,))]
    assert wait_overlaps(records) == [
        "batch and ca-ideal: identical curves (the same wait, to the second, for every job); the lines lie on top "
        "of each other, told apart by their dashes and markers."
    ]
    text = render("Simulation", "trace", records, {r.policy: summarize(r, []) for r in records})
    assert "batch and ca-ideal: identical curves" in _sections(text)["Job wait time, cumulative distribution"]
    assert _sections(text)["GPU demand and capacity over time"].endswith(
        '<p class="overlap">batch and ca-ideal: identical panels (the same demand and capacity at every moment).</p>\n'
    )
    assert killed_overlaps(records) == ["No policy killed a job in this run: every line lies on zero."]


def test_nearly_identical_wait_curves_are_named_as_overlapping():
    waits = [float(i) for i in range(1000)]
    other = waits[:-5] + [2000.0] * 5  # 0.5% of the jobs differ
    assert wait_overlaps([_record("batch", waits), _record("ca-ideal", other)]) == [
        "batch and ca-ideal: curves within 2% of the jobs of each other everywhere, so they overlap in the plot."
    ]
    assert wait_overlaps([_record("batch", waits), _record("ca-ideal", [w + 100 for w in waits])]) == []
    tail = waits[:900] + [w * 10 for w in waits[900:]]  # the same for 90% of the jobs, longer waits beyond
    assert wait_overlaps([_record("batch", waits), _record("ca-ideal", tail)]) == [
        "batch and ca-ideal: within 2% of the jobs of each other for waits under 920 s (90% of the jobs), so "
        "the lines overlap there and part beyond it."
    ]


def test_identical_kill_curves_are_named():
    kills = {1: (100.0,)}
    records = [
        _record("ca-ideal", [0, 5], kills),
        _record("ca-ideal@default", [0, 5], kills),
        _record("b", [0, 5]),
    ]
    assert killed_overlaps(records) == [
        "b killed no job: its line lies on zero.",
        "ca-ideal and ca-ideal@default: identical curves (the same jobs killed at the same times), drawn on top of "
        "each other.",
    ]


def test_the_run_records_when_each_attempt_was_killed():
    scenario = trace_scenario(HERE / "consolidation_trace.csv")
    ca = run_policy(scenario, load_spec(), "ca-ideal@default")
    killed = [o for o in ca.jobs.values() if o.kills]
    assert len(killed) == 1 and len(killed[0].kill_times) == killed[0].kills == 1
    # CA drains the node after the short jobs ended (600 s) and its 10 unneeded minutes; the job then restarts
    assert 600 + 600 <= killed[0].kill_times[0] <= killed[0].start_s
