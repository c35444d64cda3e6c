"""Clocks the model reads time from. The model never reads the system clock except through a WallClock.

A clock's ``scale(seconds)`` turns a modelled delay (a boot, a job's duration, a launch retry) into clock
seconds, which is how a wall clock compresses time while its timestamps stay real.

Time is float seconds since the Unix epoch (UTC) everywhere in the model.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC).timestamp()


class VirtualClock:
    """Time that only moves when the model is advanced (the simulator's clock)."""

    virtual = True

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"virtual time cannot go back ({t} < {self._now})")
        self._now = float(t)

    def real_seconds_until(self, t: float) -> float:
        return 0.0

    def scale(self, seconds: float) -> float:
        """A modelled delay (boot, job duration, launch retry) in clock seconds: unchanged when virtual."""
        return seconds


class WallClock:
    """Real time; the delays the model schedules are divided by ``compression`` (60: a 3-minute boot lasts 3 s).

    Timestamps stay real, so processes outside the model (the autoscaler, moto) agree with it on the time.
    """

    virtual = False

    def __init__(self, compression: float = 1.0) -> None:
        if compression <= 0:
            raise ValueError("compression must be positive")
        self.compression = float(compression)

    def now(self) -> float:
        return time.time()

    def set(self, t: float) -> None:
        """Wall time moves by itself; the model calls this while advancing and it is a no-op."""

    def real_seconds_until(self, t: float) -> float:
        """Real seconds until clock time ``t`` (0 when past)."""
        return max(0.0, t - self.now())

    def scale(self, seconds: float) -> float:
        return seconds / self.compression


def iso(t: float) -> str:
    """RFC 3339 seconds precision, as Kubernetes prints timestamps."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_datetime(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)
