"""check.sh against fake machines: it passes on a healthy one and names every problem on a broken one."""

from __future__ import annotations

import subprocess

import pytest

from tests.provision.packer.fake_machine import SCRIPTS, Machine, build
from tests.support import ROOT, load_yaml

CASES = load_yaml(ROOT / "tests/provision/packer/check_cases.yaml")


def run_check(tmp_path, machine: Machine, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = build(tmp_path, machine) | (env or {})
    return subprocess.run(
        ["bash", str(SCRIPTS / "check.sh")], env=environment, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_check_script(tmp_path, case):
    run = run_check(tmp_path, Machine(**case.get("machine", {})), case.get("env"))
    problems = [
        line for line in run.stderr.splitlines() if line.startswith("check: ") and "problem(s)" not in line
    ]
    if not case["fails"]:
        assert run.returncode == 0, run.stderr
        assert problems == []
        assert run.stdout.startswith("check: driver 580.178.04 (proprietary)")
        return
    assert run.returncode == 1, run.stdout + run.stderr
    for expected in case["fails"]:
        assert any(expected in p for p in problems), f"{expected!r} not in {problems}"
    assert len(problems) == len(case["fails"]), problems
