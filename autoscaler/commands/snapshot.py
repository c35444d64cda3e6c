"""``autoscaler snapshot > snapshot.json``: the live cluster in the planner's snapshot format (docs/snapshot.md),
so any decision can be replayed offline with ``autoscaler plan snapshot.json``. Reads only."""

from __future__ import annotations

import argparse
import json
import sys

from autoscaler.commands.live_options import COMMON, add_options, resolve


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "snapshot",
        help="print the live cluster as a snapshot (replay it with `autoscaler plan`)",
        description="Read pods, nodes and disruption budgets from Kubernetes, the node groups and their failed "
        "scaling activities from AWS, and the autoscaler's persisted failure state, and print them as one "
        "snapshot JSON document. Changes nothing.",
    )
    add_options(p, COMMON)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from autoscaler import jsonlog, service

    opts = resolve(args, COMMON)
    jsonlog.setup("warning")
    svc = service.build({**opts, "dry_run": True})
    service.sync_once(svc)
    snapshot = svc.controller.snapshot()
    if not snapshot:
        print(
            "autoscaler snapshot: could not read the cluster or the cloud (see the log above)",
            file=sys.stderr,
        )
        return 1
    sys.stdout.write(json.dumps(snapshot, separators=(",", ":"), default=str) + "\n")
    return 0
