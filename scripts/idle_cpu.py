"""The CPU a process tree uses over a window, from /proc (issue 37: the idle local cluster under 5% of a core).

    .venv/bin/invoke local-cluster & sleep 90; python3 scripts/idle_cpu.py $! 60

Counts utime+stime of every live process of the tree and the children each has reaped (cutime+cstime), so a
process that starts and ends within the window (a crash-looping pod) is counted too; prints the table per process
(localcluster/cpu.py) and the total as a share of one core. ``invoke local-cluster-idle`` starts the local cluster
and does this itself.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localcluster import cpu  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[0].isdigit():
        print("usage: idle_cpu.py PID SECONDS", file=sys.stderr)
        return 2
    try:
        window = float(argv[1])
    except ValueError:
        print(f"idle_cpu.py: SECONDS {argv[1]!r}: give a number of seconds", file=sys.stderr)
        return 2
    root = int(argv[0])
    before, t0 = cpu.sample(root), time.monotonic()
    time.sleep(window)
    after, dt = cpu.sample(root), time.monotonic() - t0
    print("\n".join(cpu.table(cpu.usage(before, after, dt), dt, min_s=0.005)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
