"""The demo's event lines (issue 16): each event on its own timestamp, a capacity failure after the scale-up that
caused it, and both clocks labelled."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from demos.autoscaler_demo.events import (
    CALL_SLACK_S,
    CausalOrder,
    compression_note,
    from_activity,
    from_log_record,
    model_time,
    stamp,
)
from demos.autoscaler_demo.watch import Watcher

T0 = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)  # in the past: the watcher's now() is well after it
G = "dlr-us-west-2-gpu-v100x8"


def _log(at_s: float, **fields) -> dict:
    """A record as autoscaler/jsonlog.py writes it."""
    t = (T0 + timedelta(seconds=at_s)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"time": t, "level": "info", "logger": "autoscaler.controller", "message": "action", **fields}


def _scale(at_s: float, group: str, old: int, new: int) -> dict:
    return _log(at_s, action="set_desired", group=group, **{"from": old, "desired": new})


def _activity(at_s: float, group: str = G, missing: int = 4, status: str = "Failed") -> dict:
    """A failed activity as the demo's AWS records it (localcluster/aws_server.py), StartTime as boto3 parses it."""
    return {
        "ActivityId": f"act-{at_s}-{group}",
        "AutoScalingGroupName": group,
        "Description": f"Launching {missing} new EC2 instances.  Status Reason: InsufficientInstanceCapacity",
        "StartTime": T0 + timedelta(seconds=at_s),
        "StatusCode": status,
    }


def _e(rec: dict):
    return from_log_record(rec, T0.timestamp(), fallback_t=-1)


def _f(act: dict):
    return from_activity(act, "us-west-2", T0.timestamp(), fallback_t=-1)


def test_events_carry_their_own_timestamps_not_the_time_they_were_read():
    assert _e(_scale(7.25, G, 0, 6)).t == pytest.approx(7.25)
    assert _f(_activity(7.2)).t == pytest.approx(7.2)
    assert _f(_activity(7.2, status="Successful")) is None


def test_a_failure_stamped_inside_the_call_is_printed_after_the_scale_up_that_caused_it():
    """The demo's AWS stamps the failure while it serves SetDesiredCapacity; the autoscaler logs the scale-up once
    the call returns: the failure is 0.05 s older than its cause but must come after it."""
    order = CausalOrder()
    order.add([_e(_scale(7.4, "dlr-us-west-2-gpu-t4", 1, 13)), _f(_activity(7.45)), _e(_scale(7.5, G, 0, 6))])
    order.add([_e(_scale(9.5, G, 6, 2))])
    texts = [d.text for d in order.release(20.0)]
    assert texts == [
        "scale up dlr-us-west-2-gpu-t4: 1 -> 13",
        f"scale up {G}: 0 -> 6",
        f"AWS us-west-2 {G}: Launching 4 new EC2 instances: InsufficientInstanceCapacity",
        f"capacity correction (AWS could not launch them) {G}: 6 -> 2",
    ]


def test_a_failure_read_before_its_cause_is_logged_waits_for_it_and_holds_back_later_events():
    """The watcher read the activity in one look and the log record of its scale-up only in the next."""
    order = CausalOrder()
    order.add([_e(_scale(6.9, "dlr-us-west-2-gpu-t4", 1, 13)), _f(_activity(7.45))])
    first = order.release(8.0)
    assert [d.text for d in first] == ["scale up dlr-us-west-2-gpu-t4: 1 -> 13"]  # the failure is held
    order.add([_e(_scale(7.5, G, 0, 6)), _e(_scale(7.6, "dlr-us-east-1-gpu-t4", 0, 2))])
    second = [d.text for d in order.release(8.5)]
    assert second[0] == f"scale up {G}: 0 -> 6"
    assert second[1].startswith(f"AWS us-west-2 {G}: Launching 4")
    assert second[2] == "scale up dlr-us-east-1-gpu-t4: 0 -> 2"


def test_nothing_is_printed_before_everything_earlier_can_have_been_read():
    order = CausalOrder()
    order.add([_e(_scale(7.9, G, 0, 6))])
    assert order.release(8.0) == []  # a record created just before the read may not be written yet
    assert [d.t for d in order.release(9.0)] == [pytest.approx(7.9)]


def test_a_failure_whose_cause_never_shows_is_printed_at_its_own_time_after_the_slack():
    order = CausalOrder()
    order.add([_f(_activity(5.0)), _e(_scale(6.0, "dlr-us-east-1-gpu-t4", 0, 2))])
    assert order.release(5.0 + CALL_SLACK_S - 1) == []
    assert [d.kind for d in order.release(5.0 + CALL_SLACK_S + 1)] == ["failure", "scale"]


def test_flush_gives_everything_held_in_causal_order():
    order = CausalOrder()
    order.add([_f(_activity(7.45)), _e(_scale(7.5, G, 0, 6))])
    assert [d.kind for d in order.flush()] == ["scale", "failure"]
    assert order.flush() == []


class _FakeAutoscaling:
    def __init__(self, activities: list[dict]):
        self.activities = activities

    def describe_scaling_activities(self):
        return {"Activities": self.activities}


def test_the_watcher_merges_log_and_activities_by_their_timestamps(tmp_path):
    """Fed a log and activities with timestamps: the scale-up comes first, the demo's notes in time order."""
    log = tmp_path / "autoscaler.log"
    log.write_text(
        json.dumps(_log(1.0, message="running")) + "\n"
        + json.dumps(_scale(7.5, G, 0, 6)) + "\n"
        + json.dumps(_scale(9.5, G, 6, 2)) + "\n"
        + '{"time": "2026-01-05T12:00:1'  # a record being written: not read yet
    )  # fmt: skip
    watcher = Watcher(None, "", ["us-west-2"], log, t0=T0.timestamp())
    watcher._clients["us-west-2"] = _FakeAutoscaling([_activity(7.45)])
    watcher.note("submitted wave 2/3 '60 GPUs of experiments'", t=6.0)
    watcher.note("a status line", t=10.0)
    shown = watcher.new_decisions()  # T0 is long past: everything stamped is known
    assert [d.text.split(":")[0] for d in shown] == [
        "submitted wave 2/3 '60 GPUs of experiments'",
        f"scale up {G}",
        f"AWS us-west-2 {G}",
        f"capacity correction (AWS could not launch them) {G}",
        "a status line",
    ]
    assert [d.kind for d in watcher.decisions] == ["scale", "failure", "scale"]  # notes are not decisions
    assert watcher.new_decisions() == []  # each record and activity once


def test_both_clocks_are_labelled():
    assert stamp(9.8, 60) == "wall   9.8 s = model  9.8 min"
    assert model_time(0.5, 60) == "30 s"
    assert model_time(98, 60) == "1 h 38 min"
    note = compression_note(60, 2)
    assert "60x the wall clock" in note and "1 wall second = 1.0 min of model time" in note
    assert "2 s scan interval is 2.0 min of model time" in note
