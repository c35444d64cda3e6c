"""Table-driven planner cases: snapshot in, expected plan out (cases/*.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.support import load_yaml

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path) -> None:
    case = load_yaml(path)
    result = plan(parse_snapshot(case["snapshot"]), PlannerConfig.from_dict(case.get("config") or {}))
    got = result.to_dict(placements=True)
    for key, want in case["expect"].items():
        assert got[key] == want, f"{path.name}: {key}"
