"""Job traces: CSV files with one job per row (see docs/simulator.md). Two real traces ship with the package in
``simulator/data`` (source, licence and citation in its ``traces.yaml``).

Columns: ``submit_time_s``, ``gpus``, ``duration_s`` (required), ``cpus`` and ``memory_gib`` (optional, may be
empty; the job's totals, not per GPU). Other columns (e.g. ``vc``) are ignored. A bad row is reported as one
line ``<file>:<line>: <what is wrong>`` (a :class:`TraceError`, exit status 2 from the CLI).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from clusterspec.errors import UserError

REQUIRED = ("submit_time_s", "gpus", "duration_s")
OPTIONAL = ("cpus", "memory_gib")
DEFAULT_TRACE = "philly-week-2017-12-08.csv"


class TraceError(UserError):
    """The trace file is unreadable or has a bad row."""


@dataclass(frozen=True)
class Job:
    """One job of a trace. ``cpus`` and ``memory_gib`` are the job's totals, None when the trace has none."""

    id: str
    submit_s: float
    gpus: int
    duration_s: float
    cpus: float | None = None
    memory_gib: float | None = None


def _number(raw: str, column: str, where: str, *, integer: bool = False, positive: bool = True) -> float:
    text = raw.strip()
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise TraceError(f"{where}: {column} {text!r} is not {kind}") from None
    if not math.isfinite(value):
        raise TraceError(f"{where}: {column} {text!r} is not a finite number")
    if positive and value <= 0:
        raise TraceError(f"{where}: {column} must be greater than 0, got {text}")
    if not positive and value < 0:
        raise TraceError(f"{where}: {column} must not be negative, got {text}")
    return value


def parse_trace(lines: list[str] | object, source: str) -> list[Job]:
    """Jobs from CSV text lines (an iterable of str), sorted by submission time; ``source`` names the file."""
    reader = csv.reader(lines)
    try:
        header = next(reader)
    except StopIteration:
        raise TraceError(f"{source}: empty trace; expected a header with {', '.join(REQUIRED)}") from None
    header = [h.strip() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceError(
            f"{source}:1: missing column(s) {', '.join(missing)}; the header needs {', '.join(REQUIRED)}"
        )
    col = {name: header.index(name) for name in (*REQUIRED, *OPTIONAL) if name in header}
    jobs: list[Job] = []
    for row in reader:
        where = f"{source}:{reader.line_num}"
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TraceError(f"{where}: {len(row)} fields, the header has {len(header)}")
        submit = _number(row[col["submit_time_s"]], "submit_time_s", where, positive=False)
        gpus = int(_number(row[col["gpus"]], "gpus", where, integer=True))
        duration = _number(row[col["duration_s"]], "duration_s", where)
        extra = {}
        for name in OPTIONAL:
            if name in col and row[col[name]].strip():
                extra[name] = _number(row[col[name]], name, where)
        jobs.append(Job(f"job-{len(jobs):05d}", submit, gpus, duration, **extra))
    if not jobs:
        raise TraceError(f"{source}: the trace has a header but no jobs")
    jobs.sort(key=lambda j: (j.submit_s, j.id))
    return jobs


def load_trace(path: str | Path) -> list[Job]:
    """The jobs of the CSV trace at ``path``."""
    p = Path(path)
    try:
        with p.open(newline="") as f:
            return parse_trace(f, str(p))
    except OSError as e:
        raise TraceError(f"{p}: cannot read the trace: {e.strerror}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{p}: not a text CSV file") from None


DATA_DIR = Path(__file__).resolve().parent / "data"  # the traces shipped with the package (data/traces.yaml)
NAMES = {"week": DEFAULT_TRACE, "ee9e8c": "philly-vc-ee9e8c.csv"}


def packaged_traces() -> dict[str, Path]:
    """The traces shipped in ``simulator/data``, by file name."""
    return {p.name: p for p in sorted(DATA_DIR.glob("*.csv"))}


def resolve_trace(name: str | None) -> Path:
    """A trace given on the command line: a path, a shipped trace's file name, or its short name (``week``,
    ``ee9e8c``); None is the Philly week. Resolves to a file or a TraceError saying what exists."""
    if name is None:
        name = DEFAULT_TRACE
    shipped = packaged_traces()
    key = NAMES.get(name, name)
    if key in shipped and not Path(name).is_file():
        return shipped[key]
    path = Path(name)
    if not path.is_file():
        known = ", ".join([*NAMES, *shipped])
        raise TraceError(f"{path}: no such trace file; give a path or one of the shipped traces: {known}")
    return path


def default_trace() -> Path:
    """The Philly week, shipped with the package."""
    return resolve_trace(None)
