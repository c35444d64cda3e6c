"""The demo's AWS: a moto server on loopback whose EC2 capacity can run out, as a region's does.

moto launches whatever an Auto Scaling group asks for and records no scaling activities. Here a region can hold
at most N instances of a type (``--limit us-west-2/p3.16xlarge=2``): when a group asks for more, only what fits
is launched, the group keeps its desired capacity (as AWS does), and a **Failed** scaling activity is recorded
with EC2's InsufficientInstanceCapacity message, which ``DescribeScalingActivities`` returns like AWS does.
Everything else is plain moto. The failure lives on the cloud's side of the wire: the autoscaler runs unmodified
and learns of it only through the Auto Scaling API, as it would in AWS.

Run: ``python -m autoscaler.demo.aws_server [--port 0] [--limit REGION/TYPE=N ...]``; prints one JSON line
``{"url": ...}`` when ready and serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import signal
import sys
import threading
from datetime import UTC, datetime

from moto.autoscaling import models as asg_models
from moto.autoscaling import responses as asg_responses
from moto.core.responses import ActionResult
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

LIMITS: dict[tuple[str, str], int] = {}
ACTIVITIES: dict[str, list[dict]] = {}  # region -> failed activities, newest first
_ids = itertools.count(1)
_lock = threading.Lock()
_original_launch = asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances


def _running(group, region: str, itype: str) -> int:
    ec2 = group.autoscaling_backend.ec2_backend
    return sum(
        1
        for inst in ec2.all_instances()
        if inst.instance_type == itype and inst.state in ("pending", "running")
    )


def _limited_launch(self, count_needed: int, propagated_tags: dict) -> None:
    region = self.autoscaling_backend.region_name
    itype = self.instance_type
    limit = LIMITS.get((region, itype))
    if limit is not None:
        room = max(0, limit - _running(self, region, itype))
        if count_needed > room:
            _record_failure(self, region, itype, count_needed - room)
            count_needed = room
    if count_needed > 0:
        _original_launch(self, count_needed, propagated_tags)


def _record_failure(group, region: str, itype: str, missing: int) -> None:
    now = datetime.now(UTC)
    zone = sorted(group.availability_zones)[0] if group.availability_zones else f"{region}a"
    activity = {
        "ActivityId": f"demo-ice-{next(_ids):06d}",
        "AutoScalingGroupName": group.name,
        "Description": f"Launching {missing} new EC2 instances.  Status Reason: InsufficientInstanceCapacity",
        "Cause": f"At {now:%Y-%m-%dT%H:%M:%SZ} a user request update of AutoScalingGroup constraints changed "
        "the desired capacity.",
        "StartTime": now,
        "EndTime": now,
        "StatusCode": "Failed",
        "StatusMessage": (
            f"We currently do not have sufficient {itype} capacity in the Availability Zone you requested "
            f"({zone}). Our system will be working on provisioning additional capacity. You can currently get "
            f"{itype} capacity by not specifying an Availability Zone in your request or choosing a different "
            "Availability Zone. Launching EC2 instance failed."
        ),
        "Progress": 100,
    }
    with _lock:
        ACTIVITIES.setdefault(region, []).insert(0, activity)


def _describe_scaling_activities(self) -> ActionResult:
    name = self._get_param("AutoScalingGroupName")
    with _lock:
        acts = [a for a in ACTIVITIES.get(self.region, []) if not name or a["AutoScalingGroupName"] == name]
    return ActionResult({"Activities": acts})


_original_describe = asg_responses.AutoScalingResponse.describe_scaling_activities


def install(limits: dict[tuple[str, str], int]) -> None:
    """Limit capacity in this process's moto (the server's), and answer DescribeScalingActivities."""
    LIMITS.clear()
    LIMITS.update(limits)
    ACTIVITIES.clear()
    asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = _limited_launch
    asg_responses.AutoScalingResponse.describe_scaling_activities = _describe_scaling_activities


def uninstall() -> None:
    """Plain moto again (tests that share the process)."""
    LIMITS.clear()
    ACTIVITIES.clear()
    asg_models.FakeAutoScalingGroup.replace_autoscaling_group_instances = _original_launch
    asg_responses.AutoScalingResponse.describe_scaling_activities = _original_describe


def parse_limit(text: str) -> tuple[tuple[str, str], int]:
    key, sep, value = text.partition("=")
    region, slash, itype = key.partition("/")
    if not (sep and slash and region and itype and value.isdigit()):
        raise ValueError(f"--limit {text!r}: expected REGION/INSTANCE-TYPE=N, e.g. us-west-2/p3.16xlarge=2")
    return (region, itype), int(value)


def serve(port: int = 0):
    """A threaded moto server on 127.0.0.1 (port 0: a free one); returns the werkzeug server."""
    app = DomainDispatcherApplication(create_backend_app)
    return make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m autoscaler.demo.aws_server", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--limit", action="append", default=[], metavar="REGION/TYPE=N")
    ap.add_argument(
        "--spec",
        metavar="PATH",
        help="create the spec's node groups (launch templates, tagged groups) at start",
    )
    args = ap.parse_args(argv)
    try:
        limits = dict(parse_limit(x) for x in args.limit)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    install(limits)
    server = serve(args.port)
    url = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True, name="moto").start()
    if args.spec:
        from autoscaler.demo.bootstrap import create_groups
        from clusterspec.errors import UserError
        from clusterspec.loader import load_spec

        try:
            spec = load_spec(args.spec)
        except UserError as e:
            print("\n".join(e.lines), file=sys.stderr)
            server.shutdown()
            return 2
        create_groups(spec, url, list(spec.spill_over_order))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    print(json.dumps({"url": url}), flush=True)
    done.wait()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
