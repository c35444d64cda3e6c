"""``autoscaler bench``: run the planner benchmark and print its figures (docs/benchmarks.md, "Planner").

Two parts: the generated cases in this process (lean objects: parse and plan CPU time, plan quality), and the
burst at real object sizes in separate processes (lean and kubectl-sized objects: whole process, in-core, peak
RSS), with ``--baseline REF`` run a second time on REF's code for ratios (``autoscaler/core/bench_sizes.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from autoscaler.options import positive_count

DEFAULT_PODS = 51_000
DEFAULT_NODES = 3_000


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="benchmark the planner on generated snapshots and print the figures"
    )
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the figures as JSON lines")
    p.add_argument(
        "--no-process",
        action="store_true",
        help="skip the runs at real object sizes (whole `autoscaler plan` processes and in-core drivers)",
    )
    p.add_argument("--no-cases", action="store_true", help="skip the generated cases (in this process)")
    p.add_argument(
        "--pods",
        type=positive_count,
        default=DEFAULT_PODS,
        help=f"pending pods at real sizes (default {DEFAULT_PODS:,})",
    )
    p.add_argument(
        "--nodes",
        type=positive_count,
        default=DEFAULT_NODES,
        help=f"existing nodes, 3 pods each, at real sizes (default {DEFAULT_NODES:,})",
    )
    p.add_argument(
        "--repeat",
        type=positive_count,
        default=1,
        help="run each real-size measurement this many times and keep the least of each figure (default 1)",
    )
    p.add_argument(
        "--baseline",
        metavar="REF",
        help="also run the real-size processes on this commit's code (e.g. main) and print new/baseline ratios",
    )


def run(args: argparse.Namespace) -> int:
    from autoscaler.core import bench_sizes
    from autoscaler.core.bench import CASES, run_case, table

    started = time.monotonic()
    rows = []
    cases = [] if getattr(args, "no_cases", False) else CASES
    for i, case in enumerate(cases, 1):
        _progress(f"case {i}/{len(cases)}: {case.name}", started)
        row = run_case(case)
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
    sizes = None
    if not args.no_process:
        try:
            sizes = bench_sizes.run(
                getattr(args, "pods", DEFAULT_PODS),
                getattr(args, "nodes", DEFAULT_NODES),
                getattr(args, "baseline", None),
                lambda what: _progress(what, started),
                getattr(args, "repeat", 1),
            )
        except (ValueError, RuntimeError) as e:
            print(f"autoscaler bench: {e}", file=sys.stderr)
            return 2
    _progress("done", started)
    if args.json:
        for r in (sizes or {}).get("rows", []):
            print(json.dumps({"case": "real-sizes"} | r))
        for r in (sizes or {}).get("ratios", []):
            print(json.dumps({"case": "real-sizes-ratio"} | r))
        return 0
    if rows:
        print(table(rows))
        for r in rows:
            if r["target_s"]:
                total = r["parse_cpu_s"] + r["plan_cpu_s"]
                verdict = "meets" if total < r["target_s"] else "MISSES"
                print(
                    f"{r['case']}: parse+plan {total:.3f} CPU s ({r['wall_s']} s wall) {verdict} the "
                    f"{r['target_s']:g} s target"
                )
    if sizes:
        print()
        print(bench_sizes.table(sizes))
        print("\n".join(bench_sizes.verdicts(sizes)))
    return 0


def _progress(what: str, started: float) -> None:
    """One line on stderr per step, terminal or not, so a piped run is never silent for long."""
    print(f"bench: [{time.monotonic() - started:5.1f} s] {what}", file=sys.stderr, flush=True)
