"""The CPU a process tree uses over a window, per process, from /proc (CPU seconds, not wall time: the machine is
shared, so a busy neighbour does not change the figure much).

Each process counts its utime+stime and what its children it has reaped used (cutime+cstime), so a process that
starts and ends within the window (a crash-looping pod, a kubectl call) is counted too, on its parent's line.
``sample(root)`` reads the tree once; ``usage(before, after, seconds)`` is the table (the processes alive at the end;
one that ended within the window is counted in its parent's reaped figure)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Proc:
    pid: int
    name: str  # what the process is: a component's binary, a Python module, a pod's command
    cpu_s: float  # utime+stime+cutime+cstime


@dataclass(frozen=True)
class Use:
    name: str
    pid: int
    cpu_s: float
    percent: float  # of one core over the window


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def name(argv: list[str]) -> str:
    """A short name for a command line: a binary's base name (kube-apiserver, etcd, kwok; scheduler-plugins'
    ``scheduler`` is the gang scheduler), ``python -m MODULE ARG`` as ``MODULE ARG``, else the first two words."""
    if not argv:
        return "?"
    base = Path(argv[0]).name
    if base.startswith("python"):
        rest = argv[1:]
        if rest[:1] == ["-m"] and len(rest) > 1:
            sub = rest[2] if len(rest) > 2 and not rest[2].startswith("-") else ""
            return f"{rest[1]} {sub}".strip()
        if rest:
            return f"{Path(rest[0]).name} {' '.join(rest[1:2])}".strip()
    if base == "scheduler" and any(a.startswith("--config=") and "gang" in a for a in argv):
        return "gang scheduler (scheduler-plugins)"
    return base


def sample(root: int) -> dict[int, Proc]:
    out = {}
    for pid in tree(root):
        fields = _stat(pid)
        if fields is None:
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
        except OSError:
            continue
        argv = [a for a in argv if a]
        out[pid] = Proc(pid, name(argv), sum(int(x) for x in fields[11:15]) / TICK)
    return out


def usage(before: dict[int, Proc], after: dict[int, Proc], seconds: float) -> list[Use]:
    """Per process alive at the end, most first: its CPU seconds over the window (all of them for a process that
    started within it) and that as a share of one core."""
    rows = []
    for pid, p in after.items():
        was = before.get(pid)
        used = p.cpu_s - (was.cpu_s if was is not None and was.name == p.name else 0.0)
        rows.append(Use(p.name, pid, used, 100 * used / seconds))
    return sorted(rows, key=lambda u: -u.cpu_s)


def table(rows: list[Use], seconds: float, min_s: float = 0.0) -> list[str]:
    total = sum(u.cpu_s for u in rows)
    lines = [f"{'process':<44} {'pid':>7} {'CPU s':>7} {'% core':>7}"]
    lines += [
        f"{u.name[:44]:<44} {u.pid:>7} {u.cpu_s:7.2f} {u.percent:7.2f}" for u in rows if u.cpu_s > min_s
    ]
    lines.append(
        f"{f'total ({len(rows)} processes, {seconds:.0f} s)':<52} {total:7.2f} {100 * total / seconds:7.2f}"
    )
    return lines
