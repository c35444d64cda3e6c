"""Options of ``autoscaler run`` and ``autoscaler snapshot``: each a flag and an environment variable.

A flag wins over its variable (``--scan-interval`` over ``AUTOSCALER_SCAN_INTERVAL``), the variable over the
default. Every value is checked here; a bad one is one line naming the flag or the variable, and exit status 2.
The live service (``autoscaler.service``) builds its pieces from the resolved options, so they live below both
the command line (``autoscaler.commands``) and the service.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass

ENV_PREFIX = "AUTOSCALER_"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


class UsageError(Exception):
    """Bad options: ``lines`` are printed, exit status 2 (autoscaler.cli)."""

    exit_code = 2

    def __init__(self, *lines: str):
        self.lines = list(lines)
        super().__init__("\n".join(lines))


def parse_duration(text: str) -> float:
    """``10s``, ``10m``, ``1h30m``, ``500ms`` or plain seconds (``900``) -> seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    if not text or _DURATION.sub("", text):
        raise ValueError(f"{text!r} is not a duration; use e.g. 10s, 10m, 1h30m")
    return sum(float(n) * _UNITS[unit] for n, unit in _DURATION.findall(text))


def known_regions() -> set[str]:
    """The regions where botocore knows Auto Scaling (every partition), from the SDK's own endpoint data."""
    import boto3

    session = boto3.session.Session()
    out: set[str] = set()
    for partition in session.get_available_partitions():
        out.update(session.get_available_regions("autoscaling", partition_name=partition))
    return out


def _regions(text: str) -> list[str]:
    regions = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in regions if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", r)]
    if not regions or bad:
        raise ValueError(f"{text!r} is not a comma-separated list of AWS regions such as us-west-2,us-east-1")
    if len(set(regions)) != len(regions):
        raise ValueError(f"{text!r} names a region twice")
    unknown = [r for r in regions if r not in known_regions()]
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)} is not a known AWS region (e.g. us-west-2, us-east-1, eu-west-1)"
        )
    return regions


def _at_least(minimum: float, why: str):
    """A duration of at least ``minimum`` seconds."""

    def parse(text: str) -> float:
        value = parse_duration(text)
        if value < minimum:
            raise ValueError(f"{text!r} is not at least {minimum:g}s ({why})")
        return value

    return parse


def _namespace(text: str) -> str:
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", text):
        raise ValueError(f"{text!r} is not a namespace name (lowercase letters, digits and '-', at most 63)")
    return text


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError(f"{text} is not a fraction in (0, 1]")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"{text} is not a port (1-65535, or 0 for none)")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"{text} is not a non-negative integer")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"{text} is not a positive integer")
    return value


def positive_count(text: str) -> int:
    """An argparse type: a positive whole number, thousands separators allowed (50,000 or 50_000)."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number")
    return value


def _dollars(text: str) -> float | None:
    """Dollars an hour (``10``, ``$10``, ``10/h``), or ``off``."""
    low = text.strip().lower()
    if low in ("off", "never", "none"):
        return None
    value = float(low.removeprefix("$").removesuffix("/h"))
    if value < 0:
        raise ValueError(f"{text!r} is not a non-negative amount of dollars an hour (e.g. 10, or off)")
    return value


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not true or false")


def _warm_pools(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        for part in [p for p in item.split(",") if p.strip()]:
            group, sep, n = part.partition("=")
            if not sep or not group.strip() or not n.strip().isdigit():
                raise ValueError(f"{part!r} is not GROUP=N (e.g. dlr-us-west-2-gpu-t4=1)")
            out[group.strip()] = int(n)
    return out


def _cluster_name(text: str) -> str:
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?", text):
        raise ValueError(f"{text!r} is not a cluster name (lowercase letters, digits and '-')")
    return text


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    parse: object = str
    default: object = None
    required: bool = False
    switch: bool = False  # a flag without a value
    repeat: bool = False

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.dest.upper()


COMMON = [
    Option("--cluster-name", "the cluster's name: discovers groups tagged k8s.io/cluster-autoscaler/<name>",
           _cluster_name, required=True),
    Option("--regions", "regions in spill-over order, comma-separated (us-west-2,us-east-1,us-east-2)", _regions,
           required=True),
    Option("--kubeconfig", "kubeconfig file (default: $KUBECONFIG, in-cluster service account, ~/.kube/config)"),
    Option("--namespace", "namespace of the autoscaler's ConfigMaps and Lease (default: $POD_NAMESPACE or "
           "research-autoscaler)", _namespace),
    Option("--aws-endpoint-url", "AWS endpoint for local emulators (a moto server), e.g. http://127.0.0.1:5000"),
]  # fmt: skip
RUN = [
    Option("--scan-interval", "periodic scan interval (at least 1s)",
           _at_least(1, "each pass reads every region's groups; less floods the AWS API"), "10s"),
    Option("--batch-idle", "a burst's pass runs once no new pending pod has come for this long (at least 50ms; "
           "less decides sooner and buys submissions that come further apart in steps)",
           _at_least(0.05, "a burst's pods come a round trip apart"), "1s"),
    Option("--lone-pod-idle", "a pod that comes alone (no other new pending pod within --batch-idle before it) is "
           "planned this long after it, unless a second one comes (at most --batch-idle)",
           _at_least(0, "a duration"), "100ms"),
    Option("--idle-threshold", "remove a node after it ran no pod for this long", parse_duration, "10m"),
    Option("--boot-timeout", "an instance not registered as a node after this is a failure (at least 1m)",
           _at_least(60, "a GPU instance takes minutes to boot and join; less terminates every new one"), "15m"),
    Option("--max-cache-age", "no scale-down, and /readyz fails, while a watch cache is older than this",
           _at_least(10, "a watch renews itself every half of it"), "2m"),
    Option("--max-scale-in-fraction", "at most this share of nodes starts removal per pass", _fraction, "0.1"),
    Option("--max-new-nodes", "cap on nodes requested in one pass, over all groups", _positive, "1000"),
    Option("--priority-cutoff", "pods with a lower priority never trigger scale-up", int, "-10"),
    Option("--spare-gpus", "GPUs kept free for the next jobs, so they start without waiting for a boot (0: none, "
           "the cheapest)", _non_negative, "0"),
    Option("--warm-pool", "keep N idle nodes of GROUP ready (repeatable; env: comma-separated)", _warm_pools,
           repeat=True),
    Option("--drift-deadline", "nodes on an old launch template or image still busy this long: report their "
           "pods (0: never; nothing is ever drained)", parse_duration, "0"),
    Option("--dry-run", "plan and print what would be done; change nothing", _bool, "false", switch=True),
    Option("--once", "run one pass, print it as JSON and exit", _bool, "false", switch=True),
    Option("--metrics-port", "port of /metrics, /healthz and /readyz (0: none)", _port, "8085"),
    Option("--leader-elect", "act only while holding the Lease (for several replicas)", _bool, "false",
           switch=True),
    Option("--aws-write-timeout", "deadline of each AWS write (one attempt); shorter than lease - renew deadline",
           _at_least(0.5, "a write needs a round trip"), "4s"),
    Option("--takeover-write-delay", "with --leader-elect: after taking the lease over, no write for this long (an "
           "old leader's abandoned write may still arrive)", parse_duration, "15s"),
    Option("--node-delete-delay-after-taint", "a node is removed only once tainted and cordoned this long (default: "
           "the scan interval, at least 5s)", parse_duration),
    Option("--unremovable-node-recheck-timeout", "a node whose removal a fresh read called off is not tainted again "
           "for this long", parse_duration, "5m"),
    Option("--new-pod-scale-up-delay", "pending pods younger than this trigger no scale-up", parse_duration, "0s"),
    Option("--confirm-scale-up-above", "a scale-up costing more dollars an hour than this is confirmed by a fresh "
           "read of the pending pods (off: never)", _dollars, "10"),
    Option("--aws-consistency-window", "a listing that still shows a group as before our write of less than this "
           "ago is taken as stale", parse_duration, "30s"),
    Option("--log-level", "debug, info, warning or error", lambda s: _choice(s, "debug info warning error"),
           "info"),
]  # fmt: skip


def _choice(text: str, choices: str) -> str:
    if text.lower() not in choices.split():
        raise ValueError(f"{text!r} is not one of {', '.join(choices.split())}")
    return text.lower()


def add_options(parser: argparse.ArgumentParser, options: list[Option]) -> None:
    for opt in options:
        help_text = f"{opt.help} [env {opt.env}]" + (f" (default: {opt.default})" if opt.default else "")
        if opt.switch:
            parser.add_argument(opt.flag, action="store_const", const="true", default=None, help=help_text)
        elif opt.repeat:
            parser.add_argument(opt.flag, action="append", default=None, metavar="GROUP=N", help=help_text)
        else:
            parser.add_argument(
                opt.flag, default=None, metavar=opt.dest.split("_")[-1].upper(), help=help_text
            )


def resolve(args: argparse.Namespace, options: list[Option], environ=os.environ) -> dict:
    """Each option's value from the flag, else the environment, else the default; UsageError when bad."""
    out: dict = {}
    problems: list[str] = []
    for opt in options:
        given = getattr(args, opt.dest, None)
        source = opt.flag
        if given is None and environ.get(opt.env) not in (None, ""):
            given, source = environ[opt.env], opt.env
            if opt.repeat:
                given = [given]
        if given is None:
            if opt.required:
                problems.append(f"{opt.flag} (or {opt.env}) is required")
                continue
            given = opt.default if not opt.repeat else []
        if given is None:
            out[opt.dest] = None
            continue
        try:
            out[opt.dest] = opt.parse(given)
        except ValueError as e:
            msg = str(e) if "is not" in str(e) else f"{given!r} is not valid"
            problems.append(f"{source}: {msg}")
    if problems:
        raise UsageError(*problems)
    return out


def namespace(value: str | None, environ=os.environ) -> str:
    """Where the autoscaler keeps its ConfigMaps and Lease: the flag, else the pod's own namespace."""
    if value:
        return value
    pod_ns = environ.get("POD_NAMESPACE")
    if pod_ns:
        try:
            return _namespace(pod_ns)
        except ValueError as e:
            raise UsageError(f"POD_NAMESPACE: {e}") from None
    return "research-autoscaler"
