"""The `autoscaler plan` command: text and JSON output, stdin, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from autoscaler.cli import main
from tests.support import load_yaml

CASE = Path(__file__).parent / "cases" / "first_fit_and_reasons.yaml"


def _snapshot_file(tmp_path: Path) -> Path:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(load_yaml(CASE)["snapshot"]))
    return path


def test_plan_json(tmp_path, capsys) -> None:
    assert main(["plan", str(_snapshot_file(tmp_path)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scale_up"] == {"w-v100": 1}
    assert {u["pod"] for u in out["unschedulable"]} == {"alice/big", "bob/sel"}


def test_plan_text(tmp_path, capsys) -> None:
    assert main(["plan", str(_snapshot_file(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "w-v100 (us-west-2): desired 0 -> 1, +1 new" in out
    assert "alice/big: needs 16 nvidia.com/gpu; the largest node type offers 8" in out


def test_bad_json_is_one_line_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"pods": [,]}')
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"{path}:1:11: not valid JSON: Expecting value"]


def test_missing_file(tmp_path, capsys) -> None:
    assert main(["plan", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_python_m_reads_stdin_and_reports_bad_snapshot_without_traceback() -> None:
    bad = {
        "pods": [],
        "nodes": [],
        "groups": [
            {
                "name": "g",
                "region": "us-west-2",
                "instance_type": "m6i.large",
                "min": 0,
                "max": 2,
                "desired": 1,
                "allocatable": {"cpu": "two"},
            }
        ],
    }
    proc = subprocess.run(
        [sys.executable, "-m", "autoscaler", "plan", "-"],
        input=json.dumps(bad),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        'groups[0] (g).allocatable.cpu: \'two\' is not a Kubernetes quantity; use e.g. "500m", "2", "64Gi"'
    ]


def test_the_autoscaler_package_does_not_import_provision() -> None:
    code = (
        "import sys, autoscaler.cli, autoscaler.core.planner, autoscaler.core.snapshot, autoscaler.core.fit\n"
        "autoscaler.cli.build_parser()\n"
        "print([m for m in sys.modules if m == 'provision' or m.startswith('provision.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_plan_text_shows_scale_down_and_back_off(tmp_path, capsys) -> None:
    cases = Path(__file__).parent / "cases"
    for name, wanted in [
        (
            "scale_down_two_steps",
            ["Scale down:", "terminate n4 (cpu): still empty on re-check", "taint     n2 (cpu)"],
        ),
        (
            "failure_spill_over",
            [
                "Backing off:",
                "west: until 2025-01-31T12:01:00Z after 1 failure(s), last insufficient-capacity",
            ],
        ),
        ("never_registered", ["terminate instance i-2 (west): not registered 1200s after launch"]),
    ]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(load_yaml(cases / f"{name}.yaml")["snapshot"]))
        assert main(["plan", str(path)]) == 0
        out = capsys.readouterr().out
        for line in wanted:
            assert line in out, f"{name}: {line!r} not in\n{out}"


def test_plan_as_the_whole_process_ends_at_once_with_its_whole_output(tmp_path, capsys) -> None:
    """``python -m autoscaler plan`` ends the process without freeing the snapshot object by object
    (commands.exit.exit_now): its output is flushed first and complete, its status 0; called in-process, ``main`` returns."""
    from autoscaler.core import generate

    path = tmp_path / "burst.json"
    path.write_text(json.dumps(generate.snapshot(pods=3_000, shape_count=4, nodes=200, seed=3)))
    assert main(["plan", str(path), "--json", "--placements"]) == 0
    in_process = json.loads(capsys.readouterr().out)
    proc = subprocess.run(
        [sys.executable, "-m", "autoscaler", "plan", str(path), "--json", "--placements"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == in_process
    assert len(in_process["placements"]) > 1_000


BAD_VALUES = [
    # (where in the base snapshot, the value, the one line) -- issue 27: the first crashed `autoscaler plan` with a
    # traceback, the other two were accepted
    (("pods", 0, "spec", "affinity"),
     {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["--5"]}]}]}}},
     "pods[0] (lab/p).spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values: operator Gt needs exactly one integer value, got ['--5']"),
    (("pods", 0, "spec", "nodeSelector"), {"gpus": 4},
     'pods[0] (lab/p).spec.nodeSelector.gpus: value 4 is not a string; quote it ("4")'),
    (("groups", 0, "price_per_hour"), float("nan"),
     "groups[0] (g).price_per_hour: expected a non-negative number of dollars per hour, got nan"),
]  # fmt: skip


def test_bad_values_are_one_line_and_exit_2_from_the_whole_process(tmp_path) -> None:
    base = load_yaml(Path(__file__).parent / "bad_snapshots.yaml")["base"]
    for i, (path, value, line) in enumerate(BAD_VALUES):
        data = json.loads(json.dumps(base))
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        if path[0] == "pods":
            data["groups"][0]["labels"] = {"gen": "3"}  # a label Gt compares: the plan reached it before
        snap = tmp_path / f"bad{i}.json"
        snap.write_text(json.dumps(data))  # NaN is written as NaN, which JSON decoders read
        proc = subprocess.run(
            [sys.executable, "-m", "autoscaler", "plan", str(snap)], capture_output=True, text=True
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [line]
