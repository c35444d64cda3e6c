"""docs/terraform.md's day-one order is exactly what `invoke up --all` does: the task runs with each step recorded
(preflight, each root's apply, the add-ons), and the recorded steps are the documented list."""

from __future__ import annotations

import re

from invoke import Context

from tests.support import ROOT


def _documented() -> list[str]:
    text = (ROOT / "docs/terraform.md").read_text()
    block = text[text.index("<!-- day-one:") : text.index("<!-- /day-one -->")]
    return [m[1] for m in re.finditer(r"^\d+\. `([^`]+)`", block, re.M)]


def test_invoke_up_all_does_the_documented_steps_in_order(monkeypatch, capsys):
    import tasks
    from provision import cluster_addons, preflight
    from provision.terraform import commands

    steps: list[str] = []
    monkeypatch.setattr(
        preflight, "run", lambda cluster, names, bucket=None, out_dir=None: steps.append("preflight") or []
    )

    def up(cluster, names, *args, **kwargs):
        steps.extend(f"apply {n}" for n in names)

    monkeypatch.setattr(commands, "up", up)
    monkeypatch.setattr(cluster_addons, "after_up", lambda cluster, names: steps.append("add-ons") or [])
    tasks.up(Context(), all=True, yes=True)
    assert steps == _documented()


def test_a_failing_preflight_applies_nothing(monkeypatch, capsys):
    import pytest
    from invoke.exceptions import Exit

    import tasks
    from provision import preflight
    from provision.terraform import commands

    monkeypatch.setattr(preflight, "run", lambda *a, **k: ["us-west-2: vCPU quota L-DB2E81BA ... is 0"])
    monkeypatch.setattr(commands, "up", lambda *a, **k: pytest.fail("applied despite the preflight"))
    with pytest.raises(Exit) as exit_:
        tasks.up(Context(), all=True, yes=True)
    assert exit_.value.code == 2
    assert "us-west-2: vCPU quota L-DB2E81BA ... is 0" in capsys.readouterr().out
