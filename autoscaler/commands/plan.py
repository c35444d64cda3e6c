"""``autoscaler plan SNAPSHOT.json [--json]``: read a snapshot and print the plan."""

from __future__ import annotations

import argparse
import sys

import msgspec

from autoscaler.commands.exit import exit_now
from autoscaler.commands.inputs import read_mapping, read_snapshot
from autoscaler.core.config import PlannerConfig
from autoscaler.core.gcpause import gc_paused
from autoscaler.core.planner import plan
from autoscaler.core.render import render
from autoscaler.core.snapshot import parse_snapshot


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "plan",
        help="plan one loop from a snapshot file (docs/snapshot.md)",
        description="Read a snapshot (docs/snapshot.md) and print the plan (docs/planner.md). "
        "Bad input: one line per problem and exit status 2.",
    )
    p.add_argument("snapshot", help="snapshot JSON file, or - for stdin")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--placements", action="store_true", help="with --json: include where each pod goes")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="planner settings: a YAML mapping of PlannerConfig fields, or a cluster spec (cluster.yaml)",
    )
    p.set_defaults(func=run)


def load_config(path: str | None) -> PlannerConfig:
    if not path:
        return PlannerConfig()
    data = read_mapping(path)
    if "regions" in data and "name" in data:
        return PlannerConfig.from_spec(data)
    return PlannerConfig.from_dict(data, path)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    # the snapshot's millions of objects leave the pause in the oldest generation (gcpause.py)
    with gc_paused():
        data = read_snapshot(args.snapshot)
        snapshot = parse_snapshot(data)
    result = plan(snapshot, config)
    if args.json:
        sys.stdout.write(msgspec.json.encode(result.to_dict(placements=args.placements)).decode() + "\n")
    else:
        print(render(result, snapshot))
    exit_now(args)  # the decoded file and the snapshot are not freed object by object
    return 0
