"""The demo's event lines: what the autoscaler did (its JSON log), what AWS could not do (failed scaling
activities) and the demo's own milestones, each stamped with its OWN time and printed in causal order, with the
wall clock and the cluster model's clock side by side.

Why order matters: the demo's AWS records an InsufficientInstanceCapacity activity while it serves the
SetDesiredCapacity call that asked for the instances, and the autoscaler logs its ``action`` record only once that
call has returned; so the failure is stamped (and can be read) a few milliseconds BEFORE the scale-up that caused
it. Merging the two sources by the moment they were read printed the effect before its cause. Here:

- every event carries its own time (the log record's ``time``, the activity's ``StartTime``);
- a failure of group G is placed right after the scale-up of G that caused it: the first scale-up of G logged
  at or after the failure's start, within :data:`CALL_SLACK_S` (the call's duration), else the failure's own time;
- an event is printed only once nothing earlier can still arrive: activities are read before the log, so after a
  look every event stamped before the activities were read is known (less :data:`LOG_MARGIN_S` for a record
  created but not yet written), and a failure whose cause may still be logged holds back everything after it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime

CALL_SLACK_S = (
    3.0  # longest a SetDesiredCapacity call can take between the failure's stamp and the log record's
)
LOG_MARGIN_S = 0.3  # a log record created this long before the log was read may not be written yet
_seq = itertools.count()


@dataclass
class Decision:
    t: float  # wall seconds since the demo started, from the event's own timestamp
    text: str
    kind: str  # scale (scale-up or capacity correction), failure, error, note (the demo's own lines)
    group: str = ""
    scale_up: bool = False
    style: str = ""  # how a note is printed (rich markup style)
    seq: int = field(default_factory=lambda: next(_seq))


def model_time(wall_s: float, compression: float) -> str:
    """A wall duration as the cluster model lived it: ``9.8 min``, ``1 h 38 min``, ``42 s``."""
    m = wall_s * compression
    if abs(m) < 60:
        return f"{m:.0f} s"
    if abs(m) < 3600:
        return f"{m / 60:.1f} min"
    return f"{int(m // 3600)} h {int(m % 3600 // 60):02d} min"


def stamp(wall_s: float, compression: float) -> str:
    """Both clocks, labelled: ``wall   9.8 s = model   9.8 min``."""
    return f"wall {wall_s:5.1f} s = model {model_time(wall_s, compression):>8}"


def compression_note(compression: float, scan_interval_s: float) -> str:
    """Said once at the start: what one wall second is in the model, and what that does to the autoscaler."""
    return (
        f"time: the cluster model runs {compression:g}x the wall clock, so 1 wall second = "
        f"{model_time(1, compression)} of model time (a p3's 4.5-minute boot takes "
        f"{270 / compression:g} wall seconds); the autoscaler reads the wall clock, so its {scan_interval_s:g} s "
        f"scan interval is {model_time(scan_interval_s, compression)} of model time. Lines show both clocks."
    )


def _parse_time(text: str | None) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except ValueError:
        return None


def from_log_record(rec: dict, t0_epoch: float, fallback_t: float) -> Decision | None:
    """The autoscaler's JSON log record as a demo event (None for records the demo does not show)."""
    at = _parse_time(rec.get("time"))
    t = at - t0_epoch if at is not None else fallback_t
    msg = rec.get("message")
    if msg == "action" and rec.get("action") == "set_desired":
        # The autoscaler lowers a group's desired capacity only to what AWS could launch after a failure
        # (nodes go one by one with TerminateInstanceInAutoScalingGroup): a correction, not a scale-down.
        up = (rec.get("desired") or 0) > (rec.get("from") or 0)
        verb = "scale up" if up else "capacity correction (AWS could not launch them)"
        text = f"{verb} {rec['group']}: {rec.get('from')} -> {rec['desired']}"
        return Decision(t, text, "scale", group=rec["group"], scale_up=up)
    if msg == "action" and rec.get("action") in ("taint", "terminate"):
        return Decision(t, f"{rec['action']} {rec.get('node')} ({rec.get('reason', '')})", "scale")
    if msg == "action failed" or rec.get("level") == "error":
        return Decision(t, f"autoscaler: {msg}: {rec.get('error', '')}", "error")
    return None


def from_activity(act: dict, region: str, t0_epoch: float, fallback_t: float) -> Decision | None:
    """A failed Auto Scaling activity (DescribeScalingActivities) as a demo event; others are not shown."""
    if act.get("StatusCode") != "Failed":
        return None
    start = act.get("StartTime")
    t = start.timestamp() - t0_epoch if isinstance(start, datetime) else fallback_t
    description = act.get("Description", "")
    reason = description.split("Status Reason: ")[-1]
    what = description.split(".")[0]
    group = act["AutoScalingGroupName"]
    return Decision(t, f"AWS {region} {group}: {what}: {reason}", "failure", group=group)


@dataclass
class CausalOrder:
    """Events in, events out in causal order once nothing earlier can still arrive (see the module's doc)."""

    held: list[Decision] = field(default_factory=list)
    scale_ups: dict[str, list[float]] = field(default_factory=dict)  # group -> times of its scale-ups

    def add(self, events: list[Decision]) -> None:
        for e in events:
            self.held.append(e)
            if e.scale_up:
                self.scale_ups.setdefault(e.group, []).append(e.t)

    def _cause(self, failure: Decision) -> float | None:
        """The time of the scale-up that caused ``failure``, if it has been logged."""
        after = [
            t for t in self.scale_ups.get(failure.group, ()) if failure.t <= t <= failure.t + CALL_SLACK_S
        ]
        return min(after) if after else None

    def _key(self, e: Decision) -> tuple:
        if e.kind == "failure":
            cause = self._cause(e)
            return (max(e.t, cause if cause is not None else e.t), 1, e.seq)
        return (e.t, 0, e.seq)

    def release(self, known_until: float) -> list[Decision]:
        """The events that can be printed now: every event stamped before ``known_until`` has been read."""
        horizon = known_until - LOG_MARGIN_S
        unsettled = [
            e
            for e in self.held
            if e.kind == "failure" and self._cause(e) is None and e.t + CALL_SLACK_S > horizon
        ]
        first_unsettled = min((e.t for e in unsettled), default=float("inf"))
        ready = sorted(
            (
                e
                for e in self.held
                if e not in unsettled and self._key(e)[0] <= horizon and self._key(e)[0] < first_unsettled
            ),
            key=self._key,
        )
        self.held = [e for e in self.held if e not in ready]
        return ready

    def flush(self) -> list[Decision]:
        """Everything still held, in causal order (at the end of the demo)."""
        out = sorted(self.held, key=self._key)
        self.held = []
        return out
