"""``autoscaler snapshot --out snapshot.json``: the live cluster in the planner's snapshot format (docs/snapshot.md),
so any decision can be replayed offline with ``autoscaler plan snapshot.json``. Reads only.

The cluster's name and regions come from the flags, else the environment (inside the autoscaler's own pod the
Deployment sets ``AUTOSCALER_CLUSTER_NAME`` and ``AUTOSCALER_REGIONS``), else the cluster spec (``--spec``,
``$AUTOSCALER_SPEC`` or ``cluster.yaml`` in the current directory). ``--out`` writes the file atomically: it
appears whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from autoscaler.options import COMMON, UsageError, add_options, resolve

SPEC_ENV = "AUTOSCALER_SPEC"
DEFAULT_SPEC = "cluster.yaml"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "snapshot",
        help="write the live cluster as a snapshot (replay it with `autoscaler plan`)",
        description="Read pods, nodes, disruption budgets, claims, volumes and storage classes from Kubernetes, the node groups and their failed "
        "scaling activities from AWS, and the autoscaler's persisted failure state, and write them as one "
        "snapshot JSON document. Changes nothing.",
    )
    add_options(p, COMMON)
    p.add_argument("--out", metavar="FILE", help="write the snapshot to FILE atomically (default: stdout)")
    p.add_argument(
        "--spec",
        metavar="PATH",
        help=f"cluster spec for the name and regions when neither flags nor environment give them "
        f"[env {SPEC_ENV}] (default: {DEFAULT_SPEC} when it exists)",
    )
    p.set_defaults(func=run)


def spec_defaults(spec: str | None, environ=os.environ) -> dict[str, str]:
    """``AUTOSCALER_CLUSTER_NAME`` and ``AUTOSCALER_REGIONS`` from the spec, for what flags and env leave open."""
    path = spec or environ.get(SPEC_ENV)
    if not path:
        if not Path(DEFAULT_SPEC).is_file():
            return {}
        path = DEFAULT_SPEC
    try:
        from clusterspec.loader import load_spec
    except ImportError:  # the autoscaler image carries no provisioning code
        raise UsageError(f"{path}: reading a cluster spec needs a checkout of the repository") from None
    cluster = load_spec(path)
    return {"AUTOSCALER_CLUSTER_NAME": cluster.name, "AUTOSCALER_REGIONS": ",".join(cluster.spill_over_order)}


def resolve_snapshot_options(args: argparse.Namespace, environ=os.environ) -> dict:
    needed = args.cluster_name is None and not environ.get("AUTOSCALER_CLUSTER_NAME")
    needed = needed or (args.regions is None and not environ.get("AUTOSCALER_REGIONS"))
    defaults = spec_defaults(args.spec, environ) if needed or args.spec else {}
    try:
        return resolve(args, COMMON, {**defaults, **environ})
    except UsageError as e:
        if needed and not defaults:
            e.lines.append(f"  (or run it where {DEFAULT_SPEC} is, or name the spec with --spec PATH)")
        raise


def write_atomically(path: Path, text: str) -> None:
    """A temporary file beside PATH, then a rename: PATH is never empty or half-written."""
    path = path.resolve()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _drop_empty_redirect() -> None:
    """``autoscaler snapshot > file`` that failed: the shell made FILE before we ran; remove it when it is still
    empty, so no empty snapshot is left behind to be replayed (Linux: the path behind standard output)."""
    try:
        if not os.path.isfile(f"/proc/self/fd/{sys.stdout.fileno()}"):
            return
        target = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
        if os.fstat(sys.stdout.fileno()).st_size == 0 and os.path.isfile(target):
            os.unlink(target)
    except (OSError, ValueError):
        pass


def run(args: argparse.Namespace) -> int:
    from autoscaler import jsonlog, service

    try:
        opts = resolve_snapshot_options(args)
    except Exception:
        if not args.out:
            _drop_empty_redirect()
        raise
    jsonlog.setup("warning")
    svc = service.build({**opts, "dry_run": True})
    service.sync_once(svc)
    snapshot = svc.controller.snapshot()
    if not snapshot:
        print(
            "autoscaler snapshot: could not read the cluster or the cloud (see the log above)",
            file=sys.stderr,
        )
        if not args.out:
            _drop_empty_redirect()
        return 1
    text = json.dumps(snapshot, separators=(",", ":"), default=str) + "\n"
    if args.out:
        write_atomically(Path(args.out), text)
        print(
            f"wrote {args.out}: {len(snapshot.get('pods', []))} pods, {len(snapshot.get('nodes', []))} nodes"
        )
    else:
        sys.stdout.write(text)
    return 0
