"""autoscaler.malloc: the freed memory of a pass goes back to the system (glibc), and nothing breaks elsewhere."""

from __future__ import annotations

import platform

import pytest

from autoscaler import malloc

GLIBC = platform.libc_ver()[0] == "glibc"


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(not GLIBC, reason="malloc_trim and mallopt are glibc's")
def test_trim_returns_freed_heap_memory_that_free_alone_keeps():
    assert malloc.available()
    blocks = [bytes(1024) + i.to_bytes(4, "little") for i in range(40_000)]  # ~40 MiB through malloc
    pin = blocks[-1]  # the heap's top stays in use: free() alone cannot shrink it
    del blocks
    before = _rss_kib()
    assert malloc.trim()
    after = _rss_kib()
    assert before - after > 20 * 1024, (before, after)
    assert pin[-4:] == (39_999).to_bytes(4, "little")


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_the_arena_cap_is_accepted():
    assert malloc.limit_arenas(malloc.ARENAS)


def test_without_glibc_both_do_nothing(monkeypatch):
    monkeypatch.setattr(malloc, "_LIBC", None)
    assert not malloc.available() and not malloc.trim() and not malloc.limit_arenas()
