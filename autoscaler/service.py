"""The live process: adapters, controller, leader election, the loop and the HTTP endpoints, wired together.

``build`` makes the pieces from resolved options (autoscaler.options); ``run_once`` and
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
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client
from kubernetes.config.config_exception import ConfigException

from autoscaler import malloc
from autoscaler.adapters.aws import AwsCloud
from autoscaler.adapters.kubernetes import KubeCluster, api_client
from autoscaler.controller import Controller, ControllerConfig
from autoscaler.core.config import PlannerConfig
from autoscaler.core.gcpause import FullCollection
from autoscaler.leader import LeaderElector
from autoscaler.loop import BatchWindow, Runner
from autoscaler.notify import SlackNotifier
from autoscaler.options import UsageError, namespace

log = logging.getLogger("autoscaler.service")
SLACK_ENV = "AUTOSCALER_SLACK_WEBHOOK_URL"
EVENT_DRAIN_S = 5.0  # on shutdown (and after --once), queued Events are written for at most this long


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
        spare_gpus=opts.get("spare_gpus") or 0,
        warm_pool=dict(opts.get("warm_pool") or {}),
        drift_deadline_s=opts.get("drift_deadline") or 0,
    )


def _api(opts: dict, environ) -> client.ApiClient:
    try:
        return api_client(opts.get("kubeconfig"))
    except Exception as e:  # noqa: BLE001 - a kubeconfig that is not one (a YAML list, no context...): one line
        where = opts.get("kubeconfig") or environ.get("KUBECONFIG") or "~/.kube/config"
        text = (str(e).splitlines() or [""])[0] if isinstance(e, ConfigException | OSError) else ""
        text = (
            text
            or "not a kubeconfig (a mapping with clusters, users and contexts, as kubectl config view prints)"
        )
        raise UsageError(f"cannot load the kubeconfig {where}: {text}") from None


def build(opts: dict, environ=os.environ) -> Service:
    malloc.limit_arenas()  # before any thread starts: threads share one arena (autoscaler.malloc)
    api = _api(opts, environ)
    ns = namespace(opts.get("namespace"), environ)
    write_timeout = float(opts.get("aws_write_timeout") or 4.0)
    cloud = AwsCloud(
        opts["cluster_name"],
        opts["regions"],
        endpoint_url=opts.get("aws_endpoint_url"),
        write_timeout_s=write_timeout,
    )
    max_age = float(opts.get("max_cache_age") or 120.0)
    # a quiet watch is ended by the server every half of the bound; one silent for 3/4 of it is dropped and relisted
    # failed lists are retried at most two scan intervals apart: while the API answers, no cache is older than that
    scan = float(opts.get("scan_interval") or 10.0)
    cluster = KubeCluster(
        api,
        namespace=ns,
        watch_timeout_s=max(5, int(max_age / 2)),
        silence_s=max_age * 0.75,
        max_backoff_s=min(30.0, max(2.0, 2 * scan)),
    )
    elector = None
    if opts.get("leader_elect"):
        identity = environ.get("POD_NAME") or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
        # a client of its own: renewals never wait for a connection behind the passes' requests
        elector = LeaderElector(
            client.CoordinationV1Api(_api(opts, environ)),
            ns,
            identity,
            takeover_delay_s=float(opts.get("takeover_write_delay", 15.0)),
        )
        if (
            not elector.may_write(write_timeout)
            and write_timeout >= elector.lease_duration_s - elector.renew_deadline_s
        ):
            raise UsageError(
                f"--aws-write-timeout: {write_timeout:g}s is not shorter than the lease duration less the renew "
                f"deadline ({elector.lease_duration_s - elector.renew_deadline_s:g}s)"
            )
    notifier = None
    if environ.get(SLACK_ENV) and not opts.get("dry_run"):
        try:
            notifier = SlackNotifier(environ[SLACK_ENV])
        except ValueError as e:
            raise UsageError(f"{SLACK_ENV}: {e}") from None
    delay = opts.get("node_delete_delay_after_taint")
    config = ControllerConfig(
        planner=planner_config(opts),
        regions=opts["regions"],
        dry_run=bool(opts.get("dry_run")),
        max_cache_age_s=max_age,
        # tainted and cordoned for a full pass at least (cluster-autoscaler waits 5 s)
        delete_delay_after_taint_s=max(5.0, scan) if delay is None else float(delay),
        unremovable_recheck_s=float(opts.get("unremovable_node_recheck_timeout", 300.0)),
        new_pod_scale_up_delay_s=float(opts.get("new_pod_scale_up_delay") or 0.0),
        confirm_scale_up_above=opts.get("confirm_scale_up_above", 10.0),
        aws_consistency_window_s=float(opts.get("aws_consistency_window", 30.0)),
    )
    may_act = (lambda: elector.may_write(write_timeout)) if elector else None  # the fence before every write
    controller = Controller(cluster, cloud, config, time.time, may_act=may_act, notifier=notifier)
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


def _acting(service: Service) -> Callable[[], bool]:
    """Whether this replica runs passes now (the Lease); while it does not, another may act, so its next pass
    reads the state ConfigMap again instead of trusting its memory (Controller.standing_by)."""
    if service.elector is None:
        return lambda: True

    def acting() -> bool:
        if service.elector.acting():
            return True
        service.controller.standing_by()
        return False

    return acting


def serve(service: Service, metrics_port: int, ready_timeout_s: float = 120.0) -> int:
    """Run until SIGTERM/SIGINT: informers, leader election, the loop and the HTTP endpoints."""
    from autoscaler import metrics

    opts = service.opts
    scan = float(opts.get("scan_interval", 10))
    full_collection = FullCollection()

    def after_pass() -> None:
        full_collection()  # the cyclic garbage the paused passes promoted (core/gcpause.py), once a minute
        malloc.trim()  # the pass's freed memory back to the system (steady RSS)

    runner = Runner(
        service.controller.run_once,
        BatchWindow(
            scan, idle_s=float(opts.get("batch_idle", 1.0)), lone_idle_s=float(opts.get("lone_pod_idle", 0.1))
        ),  # fmt: skip
        may_run=_acting(service),
        after_pass=after_pass,
        on_start=service.cluster.mark_pass,
    )
    service.cluster.on_pending_pod = lambda _pod: runner.trigger()
    started = time.monotonic()

    def healthy() -> tuple[bool, str]:
        last = runner.last_pass_end or started
        stale = time.monotonic() - last
        limit = max(120.0, 10 * scan)
        return (stale < limit, "ok" if stale < limit else f"no pass for {stale:.0f} s")

    max_age = service.controller.config.max_cache_age_s
    for name, informer in service.cluster.informers.items():
        metrics.CACHE_AGE.labels(name).set_function(lambda i=informer: -1.0 if i.age() is None else i.age())

    def ready() -> tuple[bool, str]:
        """Synced caches no older than the bound, and AWS readable at the last pass."""
        if not service.cluster.synced():
            return False, "caches not synced"
        for name, age in sorted(service.cluster.cache_ages().items()):
            if age is None or age > max_age:
                return False, f"the {name} cache is {age or 0:.0f} s old (bound {max_age:g} s)"
        last = service.controller.last
        if last is not None and last.aws_unread:
            return False, "AWS could not be read at the last pass: " + ", ".join(last.aws_unread)
        return True, "ok"

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
        service.cluster.close_events(EVENT_DRAIN_S)
        if service.notifier:
            service.notifier.flush()
        if server:
            server.shutdown()
    return 0
