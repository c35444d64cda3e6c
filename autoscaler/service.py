"""The live process: adapters, controller, leader election, the loop and the HTTP endpoints, wired together.

``build`` makes the pieces from resolved options (autoscaler.commands.live_options); ``run_once`` and
``serve`` are the two ways to run them. Errors a user can fix (a missing kubeconfig, an unreachable API)
become one line and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass

from kubernetes import client
from kubernetes.config.config_exception import ConfigException

from autoscaler.adapters.aws import AwsCloud
from autoscaler.adapters.kubernetes import KubeCluster, api_client
from autoscaler.commands.live_options import UsageError, namespace
from autoscaler.controller import Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from autoscaler.leader import LeaderElector
from autoscaler.loop import BatchWindow, Runner
from autoscaler.notify import SlackNotifier

log = logging.getLogger("autoscaler.service")
SLACK_ENV = "AUTOSCALER_SLACK_WEBHOOK_URL"


class ServiceError(Exception):
    """A problem outside the options (the API cannot be reached...): one line, exit status 1."""

    exit_code = 1

    def __init__(self, line: str):
        self.lines = [line]
        super().__init__(line)


@dataclass
class Service:
    cluster: KubeCluster
    cloud: AwsCloud
    controller: Controller
    elector: LeaderElector | None
    notifier: SlackNotifier | None
    opts: dict


def planner_config(opts: dict) -> PlannerConfig:
    return PlannerConfig(
        idle_threshold_s=opts.get("idle_threshold", 600),
        boot_timeout_s=opts.get("boot_timeout", 900),
        max_scale_in_fraction=opts.get("max_scale_in_fraction", 0.1),
        max_new_nodes_per_loop=opts.get("max_new_nodes", 1000),
        priority_cutoff=opts.get("priority_cutoff", -10),
        warm_pool=dict(opts.get("warm_pool") or {}),
    )


def build(opts: dict, environ=os.environ) -> Service:
    try:
        api = api_client(opts.get("kubeconfig"))
    except (ConfigException, OSError) as e:
        where = opts.get("kubeconfig") or environ.get("KUBECONFIG") or "~/.kube/config"
        raise UsageError(f"cannot load the kubeconfig {where}: {str(e).splitlines()[0]}") from None
    ns = namespace(opts.get("namespace"), environ)
    cloud = AwsCloud(opts["cluster_name"], opts["regions"], endpoint_url=opts.get("aws_endpoint_url"))
    cluster = KubeCluster(api, namespace=ns)
    elector = None
    if opts.get("leader_elect"):
        identity = environ.get("POD_NAME") or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
        elector = LeaderElector(client.CoordinationV1Api(api), ns, identity)
    notifier = None
    if environ.get(SLACK_ENV) and not opts.get("dry_run"):
        try:
            notifier = SlackNotifier(environ[SLACK_ENV])
        except ValueError as e:
            raise UsageError(f"{SLACK_ENV}: {e}") from None
    config = ControllerConfig(
        planner=planner_config(opts), regions=opts["regions"], dry_run=bool(opts.get("dry_run"))
    )
    controller = Controller(
        cluster, cloud, config, time.time, may_act=elector.is_leader if elector else None, notifier=notifier
    )
    return Service(cluster, cloud, controller, elector, notifier, opts)


def sync_once(service: Service) -> None:
    """List everything once (no watches); one line when the API cannot be reached."""
    try:
        service.cluster.sync()
    except Exception as e:  # noqa: BLE001 - whatever the cause, the user needs the one line
        host = service.cluster.api.configuration.host
        raise ServiceError(f"cannot list from the Kubernetes API at {host}: {_short(e)}") from None


def _short(e: Exception) -> str:
    text = getattr(e, "reason", None) or str(e)
    return str(text).splitlines()[0][:200]


def serve(service: Service, metrics_port: int, ready_timeout_s: float = 120.0) -> int:
    """Run until SIGTERM/SIGINT: informers, leader election, the loop and the HTTP endpoints."""
    from autoscaler import metrics

    opts = service.opts
    scan = float(opts.get("scan_interval", 10))
    runner = Runner(
        service.controller.run_once,
        BatchWindow(scan),
        may_run=service.elector.is_leader if service.elector else (lambda: True),
    )
    service.cluster.on_pending_pod = lambda _pod: runner.trigger()
    started = time.monotonic()

    def healthy() -> tuple[bool, str]:
        last = runner.last_pass_end or started
        stale = time.monotonic() - last
        limit = max(120.0, 10 * scan)
        return (stale < limit, "ok" if stale < limit else f"no pass for {stale:.0f} s")

    def ready() -> tuple[bool, str]:
        return (True, "ok") if service.cluster.synced() else (False, "caches not synced")

    server = None
    if metrics_port:
        try:
            server, _ = metrics.serve(metrics_port, healthy, ready)
        except OSError as e:
            raise ServiceError(f"cannot serve metrics on port {metrics_port}: {e.strerror}") from None
    service.cluster.start()
    if not service.cluster.wait_synced(ready_timeout_s):
        raise ServiceError(
            f"the Kubernetes API at {service.cluster.api.configuration.host} did not answer within {ready_timeout_s:.0f} s"
        )
    if service.elector:
        service.elector.start()
    stop = threading.Event()

    def on_signal(signum, _frame):
        log.info("stopping", extra={"signal": signum})
        stop.set()
        runner.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    log.info(
        "running",
        extra={"cluster": opts["cluster_name"], "regions": opts["regions"], "dry_run": opts.get("dry_run")},
    )
    try:
        runner.run()
    finally:
        if service.elector:
            service.elector.stop()
            service.elector.release()
        service.cluster.stop()
        if service.notifier:
            service.notifier.flush()
        if server:
            server.shutdown()
    return 0
