"""A heap of timed callbacks: the model's future (boots, pod completions, launch retries, capacity events)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable, tuple]] = []
        self._seq = itertools.count()

    def push(self, at: float, fn: Callable, *args) -> None:
        heapq.heappush(self._heap, (float(at), next(self._seq), fn, args))

    def next_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, to: float) -> list[tuple[float, Callable, tuple]]:
        """Every event of the earliest due time (<= ``to``), in insertion order; [] when none is due."""
        if not self._heap or self._heap[0][0] > to:
            return []
        t = self._heap[0][0]
        out = []
        while self._heap and self._heap[0][0] == t:
            at, _, fn, args = heapq.heappop(self._heap)
            out.append((at, fn, args))
        return out

    def __len__(self) -> int:
        return len(self._heap)
