"""Run the emulator standalone: ``python -m autoscaler.emulator [--port N] [--kubeconfig PATH] [--spec-groups FILE]``.

``--follow-aws URL`` makes the nodes follow the instances of the cluster's Auto Scaling groups at that
endpoint (a moto server), as ``make demo`` needs; groups then come from AWS.

``--write-latency-ms N`` delays every write (POST, PUT, PATCH, DELETE) by N ms, as a real API server's admission
and etcd round trip do; reads and watches are not delayed.

``--spec-groups`` takes a cluster spec (``cluster.yaml``) or a JSON/YAML list of groups in the snapshot format.
Serves HTTPS on the secure port (authentication and RBAC; ``--kubeconfig`` gets the admin's kubeconfig, a client
certificate in ``system:masters``); ``--insecure-port`` adds plain HTTP as ``system:masters``. Prints one JSON line
``{"url", "kubeconfig"}`` when ready and serves until interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import urllib.parse
from pathlib import Path

import yaml

from autoscaler.emulator.server import Emulator
from autoscaler.model import ClusterModel, WallClock, groups_from_spec
from autoscaler.model.boot import NodeLifecycle


def load_groups(path: str) -> list[dict]:
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict) and "regions" in data:
        return groups_from_spec(data)
    if isinstance(data, dict) and "groups" in data:
        return list(data["groups"])
    if isinstance(data, list):
        return data
    raise SystemExit(f"{path}: expected a cluster spec or a list of groups")


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep:
            raise SystemExit(f"--{what} {v!r}: expected KEY=VALUE")
        out[key] = value
    return out


def local_endpoint_credentials(url: str, environ=os.environ) -> None:
    """A moto server on loopback checks no credentials, but botocore must sign with some: without any in the
    environment, give it placeholder ones (never for a non-loopback endpoint, where real ones must come from the
    usual chain)."""
    host = urllib.parse.urlparse(url).hostname or ""
    loopback = host == "localhost" or host.startswith("127.") or host == "::1"
    if loopback and not environ.get("AWS_ACCESS_KEY_ID") and not environ.get("AWS_PROFILE"):
        environ["AWS_ACCESS_KEY_ID"] = "emulator"
        environ["AWS_SECRET_ACCESS_KEY"] = "emulator"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autoscaler.emulator", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="the secure port on 127.0.0.1 (0: a free one)")
    ap.add_argument(
        "--insecure-port", type=int, default=None, metavar="PORT",
        help="also serve plain HTTP as system:masters on this port (kube-apiserver's former --insecure-port; 0: a free one)",
    )  # fmt: skip
    ap.add_argument(
        "--namespace", action="append", default=[], metavar="NAME",
        help="create this namespace at start (as the cluster's bootstrap would); repeatable",
    )  # fmt: skip
    ap.add_argument("--kubeconfig", help="write a kubeconfig for the emulator here")
    ap.add_argument("--spec-groups", help="cluster.yaml or a groups file; nodes follow these groups")
    ap.add_argument("--compression", type=float, default=1.0, help="model seconds per real second")
    ap.add_argument("--capacity", action="append", default=[], metavar="REGION/TYPE=N")
    ap.add_argument("--boot-delay", action="append", default=[], metavar="FAMILY=SECONDS")
    ap.add_argument("--external-groups", action="store_true", help="groups are driven from outside (attach)")
    ap.add_argument(
        "--follow-aws", metavar="URL", help="nodes follow the Auto Scaling groups at this endpoint"
    )
    ap.add_argument("--cluster-name", default="dlr", help="the groups' cluster tag (with --follow-aws)")
    ap.add_argument("--regions", default="us-west-2,us-east-1,us-east-2", help="regions to follow")
    ap.add_argument("--follow-interval", type=float, default=1.0, help="seconds between AWS listings")
    ap.add_argument(
        "--node-gc-delay",
        type=float,
        default=30.0,
        help="model seconds a terminated instance's node stays NotReady",
    )
    ap.add_argument(
        "--write-latency-ms",
        type=float,
        default=0.0,
        help="delay every POST, PUT, PATCH and DELETE by this many milliseconds (a real API server's write path)",
    )
    ap.add_argument(
        "--control-plane-nodes", type=int, default=0, metavar="N",
        help="register N control-plane nodes as kubeadm does (label and NoSchedule taint node-role.kubernetes.io/control-plane)",
    )  # fmt: skip
    ap.add_argument(
        "--no-model-device-plugins", action="store_true",
        help="no built-in device plugin DaemonSets: GPUs are advertised by the add-ons applied to the cluster",
    )  # fmt: skip
    ap.add_argument(
        "--no-cloud-controller", action="store_true",
        help="nodes join as the rendered join has them (terraform/modules/node_join: --provider-id from IMDS, no "
        "--cloud-provider=external): no uninitialized taint, no cloud controller manager",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.write_latency_ms < 0:
        ap.error(f"--write-latency-ms {args.write_latency_ms:g}: expected 0 or more milliseconds")
    model = ClusterModel(
        WallClock(args.compression),
        boot_delays={k: float(v) for k, v in _pairs(args.boot_delay, "boot-delay").items()},
        capacity={k: int(v) for k, v in _pairs(args.capacity, "capacity").items()},
        record_model_events=True,
        node_gc_delay_s=args.node_gc_delay,
        lifecycle=NodeLifecycle(
            device_plugins=not args.no_model_device_plugins, cloud_controller=not args.no_cloud_controller
        ),
    )
    for g in load_groups(args.spec_groups) if args.spec_groups else []:
        model.cloud.add_group(g, external=args.external_groups or bool(args.follow_aws))
    primary = args.regions.split(",")[0]
    for i in range(args.control_plane_nodes):
        with model.lock:
            model.register_control_plane(f"ip-10-0-0-{10 + i}.{primary}.compute.internal", f"10.0.0.{10 + i}", primary,
                                         f"{primary}a", {"cpu": "4", "memory": "16Gi", "pods": "110"})  # fmt: skip
    emu = Emulator(
        model,
        port=args.insecure_port or 0,
        secure_port=args.port,
        insecure=args.insecure_port is not None,
        namespaces=tuple(args.namespace),
        write_latency_s=args.write_latency_ms / 1000,
    ).start()
    follower = None
    if args.follow_aws:
        from autoscaler.adapters.aws import AwsCloud  # boto3 only when following AWS
        from autoscaler.emulator.aws_follow import AwsFollower

        local_endpoint_credentials(args.follow_aws)
        cloud = AwsCloud(args.cluster_name, args.regions.split(","), endpoint_url=args.follow_aws)
        follower = AwsFollower(model, cloud, args.follow_interval).start()
    kubeconfig = str(emu.write_kubeconfig(args.kubeconfig)) if args.kubeconfig else None
    ready = {"url": emu.secure_url, "kubeconfig": kubeconfig}
    if args.insecure_port is not None:
        ready["insecure_url"] = emu.url
    print(json.dumps(ready), flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    if follower is not None:
        follower.stop()
    emu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
