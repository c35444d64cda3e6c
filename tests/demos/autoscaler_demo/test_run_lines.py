"""What ``make demo`` prints for the waves (issue 16): every wave's title, the first one's too, at submission, at
the start and in the summary, with wall and model time labelled."""

from __future__ import annotations

import io

from rich.console import Console

from demos.autoscaler_demo.events import Decision
from demos.autoscaler_demo.run import _print_summary, event_line, plan_lines, running_text, submitted_text
from demos.autoscaler_demo.workload import waves


def test_every_wave_is_announced_at_the_start_with_its_title_and_both_clocks():
    lines = plan_lines(waves(), 60)
    assert len(lines) == 3
    assert lines[0] == "  wave 1/3 at wall   0.0 s = model      0 s: 'one GPU to try an idea' (1 GPU)"
    assert "wave 3/3 at wall  16.0 s = model 16.0 min: 'a 320-GPU sweep' (320 GPUs)" in lines[2]


def test_the_first_wave_is_named_when_submitted_and_when_running():
    first = waves()[0]
    assert (
        submitted_text(1, 3, first, 1) == "submitted wave 1/3 'one GPU to try an idea': 1 job, 1 GPU, 1 pod"
    )
    assert running_text(1, 3, first, 9.8, 60) == (
        "every pod of wave 1/3 'one GPU to try an idea' is running, wall 9.8 s = model 9.8 min after it was submitted"
    )


def test_a_live_line_shows_both_clocks():
    line = event_line(Decision(7.4, "scale up g: 0 -> 6", "scale"), 60)
    assert line == "wall   7.4 s = model  7.4 min  scale up g: 0 -> 6"


def test_the_summary_names_every_wave_with_wall_and_model_time():
    out = io.StringIO()
    summary = {
        "waves": {w.title: s for w, s in zip(waves(), (9.8, 12.0, 7.4), strict=True)},
        "gpus_by_region": {"us-east-1": 352},
        "nodes_seen": 50,
        "nodes_seen_booting": 48,
        "nodes_seen_awaiting_gpus": 47,
        "scale_decisions": 9,
        "capacity_failures": 2,
        "pods": 61,
        "seconds": 31.0,
        "timeline": "build/demo/timeline.png",
    }
    _print_summary(Console(file=out, width=200), summary, 60)
    text = out.getvalue()
    assert (
        "wave 1/3 'one GPU to try an idea': every pod running wall 9.8 s = model 9.8 min after submission"
        in text
    )
    assert "wave 3/3 'a 320-GPU sweep': every pod running wall 7.4 s = model 7.4 min" in text
    assert "wall 31 s = model 31.0 min (the model runs 60x the wall clock)" in text
