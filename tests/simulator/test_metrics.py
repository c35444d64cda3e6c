from __future__ import annotations

import pytest

from simulator.metrics import (
    JobOutcome,
    Loop,
    RunRecord,
    Sample,
    find_bursts,
    integrate,
    loops_to_request,
    summarize,
)
from simulator.traces import Job
from tests.support import ROOT, load_yaml

CASES = load_yaml(ROOT / "tests/simulator/metrics_cases.yaml")


def record_of(case: dict) -> RunRecord:
    rec = RunRecord("p", end_s=case["end_s"])
    for jid, submit, gpus, duration, start, end, kills in case["jobs"]:
        rec.jobs[jid] = JobOutcome(Job(jid, submit, gpus, duration), start, end, kills)
    rec.samples = [Sample(*row) for row in case["samples"]]
    rec.loops = [Loop(*row) for row in case["loops"]]
    return rec


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_figures_match_hand_computation(case):
    rec = record_of(case)
    bursts = find_bursts([o.job for o in rec.jobs.values()], window_s=60, min_gpus=16)
    got = summarize(rec, bursts)
    for key, want in case["expect"].items():
        assert got[key] == (pytest.approx(want) if isinstance(want, float) else want), key


def test_integration_stops_at_the_end():
    samples = [Sample(0, 0, 0, 0, 4, 1.0), Sample(100, 0, 0, 0, 2, 1.0)]
    assert integrate(samples, 50, "provisioned_gpus") == 200
    assert integrate(samples, 400, "provisioned_gpus") == 400 + 600


def test_bursts_are_windows_of_enough_gpus():
    submits = [(0, 8), (59, 8), (61, 4), (200, 16), (230, 16), (400, 1), (420, 8), (440, 8), (500, 8)]
    jobs = [Job(f"j{i}", t, g, 10) for i, (t, g) in enumerate(submits)]
    bursts = find_bursts(jobs, window_s=60, min_gpus=16)
    # j2's window holds only itself (4 GPUs); j5's holds j5-j7 (17 GPUs); j8 alone is too small
    assert [(b.start_s, b.job_ids, b.gpus, b.end_s) for b in bursts] == [
        (0, ("j0", "j1"), 16, 59),
        (200, ("j3", "j4"), 32, 230),
        (400, ("j5", "j6", "j7"), 17, 440),
    ]


def test_loops_count_until_the_whole_burst_is_requested():
    (burst,) = find_bursts([Job("a", 0, 16, 10), Job("b", 25, 16, 10)], window_s=60, min_gpus=32)
    # counted from b's submission (25): the loop at 30 falls short, the one at 40 covers the demand
    rec = RunRecord("p", loops=[Loop(10, 0, 16, 16), Loop(30, 16, 24, 32), Loop(40, 24, 32, 32)])
    assert loops_to_request(rec, burst) == 2


def test_capacity_already_there_takes_zero_loops():
    rec = RunRecord("static", loops=[Loop(5, 64, 64, 40)])
    (burst,) = find_bursts([Job("a", 0, 40, 10)], min_gpus=1)
    assert loops_to_request(rec, burst) == 0
