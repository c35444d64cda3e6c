"""``autoscaler bench``: run the planner benchmark and print its figures (docs/benchmarks.md, "Planner")."""

from __future__ import annotations

import argparse
import json
import sys
import time


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="benchmark the planner on generated snapshots and print the figures"
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON lines")
    p.add_argument("--no-process", action="store_true", help="skip the whole-process `autoscaler plan` run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from autoscaler.core.bench import CASES, run_case, run_process, table

    rows = []
    started = time.monotonic()
    for i, case in enumerate(CASES, 1):
        _progress(f"case {i}/{len(CASES)}: {case.name}", started)
        row = run_case(case)
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
    if not args.no_process:
        _progress("`autoscaler plan --json` as a whole process", started)
    proc = None if args.no_process else run_process()
    _progress("done", started)
    if args.json:
        if proc:
            print(json.dumps(proc))
        return 0
    print(table(rows))
    for r in rows:
        if r["target_s"]:
            total = r["parse_cpu_s"] + r["plan_cpu_s"]
            verdict = "meets" if total < r["target_s"] else "MISSES"
            print(
                f"{r['case']}: parse+plan {total:.3f} CPU s ({r['wall_s']} s wall) {verdict} the {r['target_s']:g} s target"
            )
    if proc:
        verdict = "meets" if proc["wall_s"] < proc["target_s"] else "MISSES"
        print(
            f"{proc['case']}: `autoscaler plan --json` on a {proc['file_mib']} MiB snapshot: {proc['wall_s']} s wall, "
            f"{proc['cpu_s']} CPU s as a whole process; {verdict} the {proc['target_s']:g} s target (wall)"
        )
    return 0


def _progress(what: str, started: float) -> None:
    """One line on stderr per step, terminal or not, so a piped run is never silent for long."""
    print(f"bench: [{time.monotonic() - started:5.1f} s] {what}", file=sys.stderr, flush=True)
