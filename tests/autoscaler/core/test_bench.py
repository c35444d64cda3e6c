"""The benchmark's machinery on a tiny case (its figures are printed by `autoscaler bench`, never asserted)."""

from __future__ import annotations

from autoscaler.commands.bench import register  # noqa: F401  (the subcommand module imports cleanly)
from autoscaler.core.bench import Case, run_case, table


def test_run_case_reports_every_figure() -> None:
    row = run_case(Case("tiny", pods=300, shapes=6, nodes=20, gang_size=0))
    assert row["pods"] == 300 and row["groups"] == 30
    assert row["new_nodes"] >= row["lower_bound"] > 0
    assert "| tiny | 300 | 20 | 30 |" in table([row])


def test_a_case_with_claims_plans_as_without() -> None:
    """The claims generated are bound on volumes any node can use: they are looked up, and change no placement."""
    rows = [run_case(Case("tiny", pods=300, shapes=6, nodes=20, claims=k)) for k in (0, 3)]
    assert rows[0]["new_nodes"] == rows[1]["new_nodes"] and rows[1]["unschedulable"] == 0
