"""The benchmark's machinery on a tiny case (its figures are printed by `autoscaler bench`, never asserted)."""

from __future__ import annotations

from autoscaler.commands.bench import register  # noqa: F401  (the subcommand module imports cleanly)
from autoscaler.core.bench import Case, run_case, table


def test_run_case_reports_every_figure() -> None:
    row = run_case(Case("tiny", pods=300, shapes=6, nodes=20, gang_size=0))
    assert row["pods"] == 300 and row["groups"] == 30
    assert row["new_nodes"] >= row["lower_bound"] > 0
    assert "| tiny | 300 | 20 | 30 |" in table([row])
