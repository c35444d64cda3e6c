"""The collector pause around parsing and planning (core/gcpause.py)."""

from __future__ import annotations

import gc
import weakref

from autoscaler.core.gcpause import FullCollection, gc_paused


class _Node:
    pass


def test_objects_made_while_paused_leave_it_in_the_oldest_generation_and_stay_collectable() -> None:
    """The objects are not left in the youngest generation for the next collection to walk, and they are not
    frozen: a cycle made during the pause is still found by a full collection."""
    was = gc.isenabled()
    gc.enable()
    try:
        gc.collect()
        with gc_paused():
            assert not gc.isenabled()
            kept = [[i] for i in range(50_000)]
            cycle = _Node()
            cycle.me = cycle
            ref = weakref.ref(cycle)
            del cycle
        assert gc.isenabled()
        assert gc.get_count()[0] < 1_000  # not the 50,000 new lists
        assert gc.get_freeze_count() == 0
        assert ref() is not None  # garbage, but no collection ran yet
        gc.collect()
        assert ref() is None
        assert len(kept) == 50_000
    finally:
        if not was:
            gc.disable()


def test_a_nested_pause_leaves_the_collector_to_the_outer_one() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        with gc_paused():
            with gc_paused():
                pass
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        if not was:
            gc.disable()


def test_a_full_collection_after_a_pass_at_most_once_a_minute_finds_what_a_pause_promoted() -> None:
    """A cycle made during a pause sits in the oldest generation; the live process's after-pass step
    (FullCollection) finds it at the latest a minute later, and does not collect more often than that."""
    was = gc.isenabled()
    gc.enable()
    now = [0.0]
    full = FullCollection(every_s=60.0, monotonic=lambda: now[0])
    try:
        gc.collect()
        with gc_paused():
            cycle = _Node()
            cycle.me = cycle
            ref = weakref.ref(cycle)
            del cycle
        now[0] = 59.0
        assert not full() and ref() is not None
        now[0] = 60.0
        assert full() and ref() is None
        now[0] = 100.0
        assert not full()
    finally:
        if not was:
            gc.disable()
