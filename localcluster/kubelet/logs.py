"""A container's log as the kubelet serves it (``/containerLogs/{namespace}/{pod}/{container}``, kubelet
``GetKubeletContainerLogs`` over kuberuntime ``ReadLogs``): the CRI log file of its current run, or of the run
before with ``previous``, with ``tailLines``, ``limitBytes``, ``sinceSeconds``, ``sinceTime``, ``timestamps`` and
``follow`` (new lines until the run finishes)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

FOLLOW_POLL_S = 0.1


class BadRequest(ValueError):
    pass


@dataclass(frozen=True)
class Options:
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail: int | None = None
    limit: int | None = None
    since: float | None = None  # wall time

    @classmethod
    def parse(cls, query: dict[str, str]) -> Options:
        def flag(k: str) -> bool:
            return query.get(k, "false").lower() in ("1", "true")

        def number(k: str) -> int | None:
            if k not in query:
                return None
            try:
                return int(query[k])
            except ValueError:
                raise BadRequest(f'{k}: strconv.ParseInt: parsing "{query[k]}": invalid syntax') from None

        since = None
        if (s := number("sinceSeconds")) is not None:
            since = time.time() - s
        elif "sinceTime" in query:
            since = datetime.fromisoformat(query["sinceTime"].replace("Z", "+00:00")).timestamp()
        tail = number("tailLines")
        return cls(flag("follow"), flag("previous"), flag("timestamps"), tail if tail is None or tail >= 0 else None,
                   number("limitBytes"), since)  # fmt: skip


def _parse(line: bytes) -> tuple[float, bytes, bool]:
    """(time, text, whole line) of one CRI log line."""
    ts, _, rest = line.partition(b" ")
    _stream, _, rest = rest.partition(b" ")
    tag, _, text = rest.partition(b" ")
    t = datetime.fromisoformat(ts.decode()[:26] + "+00:00").timestamp()
    return t, text.rstrip(b"\n"), tag != b"P"


def _render(line: bytes, timestamps: bool) -> bytes:
    ts = line.partition(b" ")[0]
    t, text, whole = _parse(line)
    return (ts + b" " if timestamps else b"") + text + (b"\n" if whole else b"")


def read(path: Path, opts: Options, done: Callable[[], bool]) -> Iterator[bytes]:
    """The log's chunks; with ``follow``, new lines until ``done()`` and the file is read to its end."""
    with open(path, "rb") as f:
        lines = f.readlines()
        pos = f.tell()
    if opts.since is not None:
        lines = [ln for ln in lines if _parse(ln)[0] >= opts.since]
    if opts.tail is not None:
        lines = lines[len(lines) - opts.tail :] if opts.tail else []
    sent = 0

    def cut(chunk: bytes) -> bytes:
        nonlocal sent
        if opts.limit is not None:
            chunk = chunk[: max(0, opts.limit - sent)]
        sent += len(chunk)
        return chunk

    first = cut(b"".join(_render(ln, opts.timestamps) for ln in lines))
    if first:
        yield first
    if not opts.follow:
        return
    buf = b""
    while opts.limit is None or sent < opts.limit:
        finished = done()
        with open(path, "rb") as f:
            f.seek(pos)
            data = f.read()
            pos += len(data)
        buf += data
        *whole, buf = buf.split(b"\n")
        if whole:
            chunk = cut(b"".join(_render(ln + b"\n", opts.timestamps) for ln in whole if ln))
            if chunk:
                yield chunk
        if finished:
            return
        time.sleep(FOLLOW_POLL_S)
