from __future__ import annotations

import json
import subprocess
import sys

import pytest

from clusterspec.errors import UserError
from simulator.simulate import main, parse_policies
from tests.support import ROOT

HERE = ROOT / "tests/simulator"


def test_json_and_report_for_the_issue_shape(tmp_path):
    out = tmp_path / "figures.json"
    doc = main(
        trace=str(HERE / "small_trace.csv"),
        policies="batch,static-peak",
        json_out=str(out),
        report=str(tmp_path / "report"),
        workers=1,
    )
    assert json.loads(out.read_text()) == doc
    assert list(doc["policies"]) == ["batch", "static-peak"]
    assert doc["lower_bound"]["cost_usd"] <= min(f["cost_usd"] for f in doc["policies"].values())
    for figures in doc["policies"].values():
        for key in ("wait_p50_s", "wait_p95_s", "wait_p99_s", "gpu_hours_provisioned", "gpu_hours_used",
                    "cost_usd", "jobs_killed", "api_calls", "cost_over_bound"):  # fmt: skip
            assert isinstance(figures[key], int | float), key
        assert sum(figures["api_calls_by_region"].values()) == figures["api_calls"]
    assert (tmp_path / "report" / "index.html").read_text().count("<img") == 4


def test_unknown_policy_is_one_line():
    with pytest.raises(
        UserError, match=r"--policies: unknown fifo, batch@spread; choose from batch,batch-lean,ca-regional,"
    ):
        parse_policies("batch,fifo,batch@spread")
    with pytest.raises(UserError, match=r"--scheduler: unknown 'spread'; choose from bin-packing, default"):
        parse_policies("batch", "spread")
    assert parse_policies("batch,ca-ideal@default", "bin-packing") == [
        "batch@bin-packing",
        "ca-ideal@default",
    ]


def test_simulate_needs_no_trace_argument(tmp_path):
    """From a fresh clone: the shipped Philly week, here its first 20 minutes."""
    doc = main(policies="batch,static-p95", window=1 / 3, workers=1, json_out=str(tmp_path / "f.json"))
    assert doc["scenario"] == "philly-week-2017-12-08.csv"
    assert (
        doc["policies"]["batch"]["jobs"] == doc["policies"]["static-p95"]["jobs"] == 5
    )  # submitted by 20 min
    assert doc["policies"]["batch"]["jobs_finished"] == doc["policies"]["batch"]["jobs"]


def test_bad_trace_through_invoke_is_one_line_and_status_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("submit_time_s,gpus,duration_s\n0,1,60\n10,two,60\n")
    proc = subprocess.run(
        [sys.executable, "-m", "invoke", "simulate", "--trace", str(bad), "--policies", "static-peak"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"{bad}:3: gpus 'two' is not a whole number"


def test_a_sensitivity_run_can_leave_a_gpu_model_out_of_the_spec():
    from clusterspec.loader import load_spec
    from simulator.simulate import without_gpus

    spec = without_gpus(load_spec(), ["t4"])
    assert all(
        g.labels.get("research.cluster/gpu-model") != "t4" for r in spec.regions for g in r.node_groups
    )
    assert any(
        g.labels.get("research.cluster/gpu-model") == "v100" for r in spec.regions for g in r.node_groups
    )
    with pytest.raises(
        UserError, match=r"^--without-gpu: no node group has research.cluster/gpu-model h100$"
    ):
        without_gpus(load_spec(), ["h100"])
