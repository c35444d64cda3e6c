"""Clocks the model reads time from. The model never reads the system clock except through a WallClock.

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


class WallClock:
    """Model time = start + compression * (real seconds elapsed): 60 makes a 3-minute boot last 3 s.

    ``start`` defaults to the real time at construction, so with compression 1 model time is real time.
    """

    virtual = False

    def __init__(self, compression: float = 1.0, start: float | None = None) -> None:
        if compression <= 0:
            raise ValueError("compression must be positive")
        self.compression = float(compression)
        self._real0 = time.monotonic()
        self._start = time.time() if start is None else float(start)

    def now(self) -> float:
        return self._start + (time.monotonic() - self._real0) * self.compression

    def set(self, t: float) -> None:
        """Wall time moves by itself; the model calls this while advancing and it is a no-op."""

    def real_seconds_until(self, t: float) -> float:
        """Real seconds until model time ``t`` (0 when past)."""
        return max(0.0, (t - self.now()) / self.compression)


def iso(t: float) -> str:
    """RFC 3339 seconds precision, as Kubernetes prints timestamps."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_datetime(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)
