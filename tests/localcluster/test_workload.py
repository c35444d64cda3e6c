"""localcluster/workload.py: a job's pods complete after its duration over the compression, as kwok reads it."""

from __future__ import annotations

from localcluster.workload import KWOK_COMPLETE_DELAY, KWOK_COMPLETE_JITTER, objects
from simulator.traces import Job


def kwok_delay_s(annotations: dict, stage_ms: int = 1000, stage_jitter_ms: int = 5000) -> float:
    """kwok v0.8.0's Stage.Delay (pkg/utils/lifecycle/lifecycle.go) for the pod-complete stage build-tools.sh
    installs (durationMilliseconds 1000, jitterDurationMilliseconds 5000, each overridden by its annotation): a
    jitter at or below the delay is the delay; above it, the delay plus a random part (its least here)."""

    def seconds(text: str | None, default_ms: int) -> float:
        return default_ms / 1000 if text is None else float(text.rstrip("s"))

    delay = seconds(annotations.get(KWOK_COMPLETE_DELAY), stage_ms)
    jitter = seconds(annotations.get(KWOK_COMPLETE_JITTER), stage_jitter_ms)
    return jitter if jitter <= delay else delay


def test_a_jobs_pods_complete_after_its_duration_over_the_compression() -> None:
    job = Job("exp-16", 360, 8, 2400)
    for compression, wall_s in ((60.0, 40.0), (15.0, 160.0), (1.0, 2400.0)):
        annotations = objects(job, "ns", compression)[-1]["spec"]["template"]["metadata"]["annotations"]
        assert annotations[KWOK_COMPLETE_DELAY] == annotations[KWOK_COMPLETE_JITTER] == f"{wall_s:.3f}s"
        assert kwok_delay_s(annotations) == wall_s


def test_without_the_jitter_annotation_kwok_completed_every_pod_after_5_s() -> None:
    """What the demo's jobs did before (issue 33): the stage's default jitter, 5 s, is below any delay longer
    than it, and kwok takes it as the delay, so a 40-minute job ran 5 wall seconds at any compression."""
    assert kwok_delay_s({KWOK_COMPLETE_DELAY: "160.000s"}) == 5.0
    assert kwok_delay_s({KWOK_COMPLETE_DELAY: "2.000s"}) == 2.0
