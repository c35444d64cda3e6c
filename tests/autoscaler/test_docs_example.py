"""docs/examples/snapshot.json, which the README and docs/snapshot.md point newcomers to, plans as they say."""

from __future__ import annotations

import json

from autoscaler.cli import main
from tests.support import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "snapshot.json"


def test_the_documented_example_spills_the_gang_whole_to_the_next_region(capsys):
    assert main(["plan", str(EXAMPLE), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["scale_up"] == {"dlr-us-east-1-gpu-v100x8": 4}
    assert plan["desired"]["dlr-us-west-2-gpu-v100x8"] == 1  # brought back to what exists after the failure
    assert {u["pod"] for u in plan["unschedulable"]} == {"carol/too-big", "dave/a100-please"}
