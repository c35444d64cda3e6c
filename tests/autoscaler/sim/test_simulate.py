from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autoscaler.sim.simulate import main, parse_policies
from provision.errors import UserError
from tests.support import ROOT

HERE = ROOT / "tests/autoscaler/sim"


def test_json_and_report_for_the_issue_shape(tmp_path):
    out = tmp_path / "figures.json"
    doc = main(
        trace=str(HERE / "small_trace.csv"),
        policies="batch,static",
        json_out=str(out),
        report=str(tmp_path / "report"),
        workers=1,
    )
    assert json.loads(out.read_text()) == doc
    assert list(doc["policies"]) == ["batch", "static"]
    for figures in doc["policies"].values():
        for key in ("wait_p50_s", "wait_p95_s", "wait_p99_s", "gpu_hours_provisioned", "gpu_hours_used",
                    "cost_usd", "jobs_killed", "api_calls"):  # fmt: skip
            assert isinstance(figures[key], int | float), key
    assert (tmp_path / "report" / "index.html").read_text().count("<img") == 3


def test_unknown_policy_is_one_line():
    with pytest.raises(UserError, match=r"--policies: unknown fifo; choose from batch,step,ca-like,static"):
        parse_policies("batch,fifo")


def test_bad_trace_through_invoke_is_one_line_and_status_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("submit_time_s,gpus,duration_s\n0,1,60\n10,two,60\n")
    proc = subprocess.run(
        [sys.executable, "-m", "invoke", "simulate", "--trace", str(bad), "--policies", "static"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"{bad}:3: gpus 'two' is not a whole number"
