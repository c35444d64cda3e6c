"""``autoscaler run``: the live autoscaler (or one pass of it with ``--once``; ``--dry-run`` changes nothing)."""

from __future__ import annotations

import argparse
import json
import sys

from autoscaler.core.timeutil import show_time
from autoscaler.options import COMMON, RUN, add_options, resolve


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="run the autoscaler against a Kubernetes cluster and its Auto Scaling groups",
        description="Watch pending pods and nodes, plan, and scale the cluster's Auto Scaling groups in every "
        "region. Every flag can also be set by its environment variable (shown in brackets). "
        "Bad options: one line and exit status 2.",
    )
    add_options(p, COMMON + RUN)
    p.set_defaults(func=run)


def _groups_exist(cloud, opts: dict) -> None:
    """A --cluster-name (or region) that tags no group is a typo, not an idle cluster: one line, exit status 2.
    Regions that cannot be read now are left to the loop (it retries them and says so)."""
    from autoscaler.options import UsageError
    from clusterspec.names import CA_CLUSTER_TAG_PREFIX, CA_ENABLED_TAG

    if cloud.list_groups() or cloud.unread_regions:
        return
    name = opts["cluster_name"]
    raise UsageError(
        f"--cluster-name {name}: no Auto Scaling group in {', '.join(opts['regions'])} is tagged "
        f"{CA_CLUSTER_TAG_PREFIX}{name} and {CA_ENABLED_TAG}=true; give the spec's name (cluster.yaml: name) "
        "and the regions its groups are in"
    )


def run(args: argparse.Namespace) -> int:
    from autoscaler import jsonlog, service

    opts = resolve(args, COMMON + RUN)
    jsonlog.setup(opts["log_level"])
    svc = service.build(opts)
    if opts["once"]:
        service.sync_once(svc)
        _groups_exist(
            svc.cloud, opts
        )  # after the API answered: AWS is asked only for a cluster that is there
        result = svc.controller.run_once()
        svc.cluster.close_events(service.EVENT_DRAIN_S)  # the pass's Events go out before the process ends
        out = {
            "time": show_time(result.now),
            "dry_run": bool(opts["dry_run"]),
            "plan": result.plan,
            "actions": result.actions,
            "errors": result.errors,
        }
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True, default=str) + "\n")
        return 0 if result.ok and not result.errors else 1  # any failed read or call fails the pass
    _groups_exist(svc.cloud, opts)  # the live process too: a typo never serves an empty cluster silently
    return service.serve(svc, opts["metrics_port"])
