"""One table from several ``invoke bench-peers`` runs: every ``row.json`` under the given folders (each run of a
burst and an autoscaler writes one), in the benchmark's order of bursts and autoscalers, the later run of a pair
kept; printed, with the simulator's check, and written under ``--out`` as ``invoke bench-peers`` writes them.

For a full table put together from runs of a few bursts or autoscalers each (the full size in one go is about
an hour on 2 cores): ``python -m demos.bench_peers.table build/bench-peers-a build/bench-peers-b``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from clusterspec.loader import load_spec
from demos.bench_peers import run, sim_check
from demos.bench_peers.scenarios import FULL, SMALL


def rows_under(folders: list[Path], peer_order: list[str]) -> list[dict]:
    found: dict[tuple[str, str], tuple[float, dict]] = {}
    for folder in folders:
        for path in folder.glob("*/*/row.json"):
            row = json.loads(path.read_text())
            key = (row["scenario"], row["peer"])
            if key not in found or path.stat().st_mtime > found[key][0]:
                found[key] = (path.stat().st_mtime, row)
    scen = [b.name for b in (*FULL, *SMALL)]
    return [
        r
        for _, r in sorted(
            found.values(), key=lambda x: (scen.index(x[1]["scenario"]), peer_order.index(x[1]["peer"]))
        )
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m demos.bench_peers.table", description=__doc__.splitlines()[0]
    )
    ap.add_argument("folders", nargs="+", type=Path, help="the --out folders of earlier runs")
    ap.add_argument("--out", type=Path, default=Path("build/bench-peers"), help="where the table goes")
    ap.add_argument("--idle-s", type=int, default=30, help="the runs' --idle-s (the simulator's idle time)")
    ap.add_argument("--after-s", type=float, default=60.0, help="the runs' --after-s (the table's title)")
    ap.add_argument(
        "--cached-sim-only",
        action="store_true",
        help="check only the runs whose simulation --out/sim-cache holds (the rest take minutes)",
    )
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"{', '.join(missing)}: not a folder (the --out of an invoke bench-peers run)", file=sys.stderr)
        return 2
    spec = run.bench_spec(load_spec(None), args.idle_s)
    rows = rows_under(args.folders, run.peers(spec, small=False))
    if not rows:
        print(f"no row.json under {', '.join(map(str, args.folders))}", file=sys.stderr)
        return 2
    console = Console(width=None if sys.stdout.isatty() else 200)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(
        json.dumps([{k: v for k, v in r.items() if k != "samples"} for r in rows], indent=1)
    )
    (args.out / "table.md").write_text(run.markdown(rows) + "\n")
    console.print(run.table(rows, args.after_s))
    names = {r["scenario"] for r in rows}
    checks = sim_check.compare(
        rows,
        [b for b in FULL if b.name in names],
        spec,
        args.out / "sim-cache",
        compute=not args.cached_sim_only,
    )
    (args.out / "sim-check.json").write_text(json.dumps(checks, indent=1))
    (args.out / "sim-check.md").write_text(sim_check.markdown(checks) + "\n")
    console.print(run.sim_table(checks))
    console.print(f"figures: {args.out / 'table.md'}; plot: {run.plot(rows, args.out / 'bench-peers.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
