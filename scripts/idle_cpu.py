"""The CPU a process tree uses over a window, from /proc (issue 37: the idle local cluster under 5% of a core).

    .venv/bin/invoke local-cluster & sleep 90; python3 scripts/idle_cpu.py $! 60

Counts utime+stime of every live process of the tree and the children each has reaped (cutime+cstime), so a
process that starts and ends within the window (a crash-looping pod) is counted too; prints the total as a share of
one core and the processes that used more than 0.05 s.
"""

from __future__ import annotations

import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = open(f"/proc/{pid}/stat").read()  # noqa: SIM115, PTH123
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat(int(name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def cpu(pids: list[int]) -> dict[int, tuple[float, str]]:
    out = {}
    for pid in pids:
        fields = _stat(pid)
        if fields is None:
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline").read().replace("\0", " ").strip()  # noqa: SIM115, PTH123
        except OSError:
            cmd = "?"
        out[pid] = (sum(int(x) for x in fields[11:15]) / TICK, cmd[:110])
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[0].isdigit():
        print("usage: idle_cpu.py PID SECONDS", file=sys.stderr)
        return 2
    root, window = int(argv[0]), float(argv[1])
    before, t0 = cpu(tree(root)), time.monotonic()
    time.sleep(window)
    after, dt = cpu(tree(root)), time.monotonic() - t0
    used = sum(t for t, _ in after.values()) - sum(t for t, _ in before.values())
    print(f"process tree of {root}: {len(after)} processes, {used:.2f} CPU s in {dt:.0f} s = "
          f"{100 * used / dt:.1f}% of a core")  # fmt: skip
    for pid, (t, cmd) in sorted(after.items(), key=lambda kv: before.get(kv[0], (0.0, ""))[0] - kv[1][0]):
        if (d := t - before.get(pid, (0.0, ""))[0]) > 0.05:
            print(f"  {pid:>7} {d:6.2f} s  {cmd}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
