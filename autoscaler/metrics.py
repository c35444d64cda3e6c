"""Prometheus metrics of the live autoscaler, and the HTTP endpoints /metrics, /healthz and /readyz.

The metrics live in one registry of their own (``REGISTRY``), so a process, the tests and the simulator never
collide with metrics of other libraries; the controller and the adapters update them as they work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

REGISTRY = CollectorRegistry(auto_describe=True)
_NS = "autoscaler"

LOOP_DURATION = Histogram(
    "loop_duration_seconds",
    "Time of one snapshot-plan-act loop",
    namespace=_NS,
    registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
PASS_PHASE = Histogram(
    "pass_phase_seconds",
    "Wall time of one phase of a loop: state, cluster (the watch caches), aws (groups and scaling activities), "
    "plan, confirm (the fresh read of pending pods), scale_up (desired capacity written), act (scale-down, "
    "Events), persist, observe",
    ["phase"],
    namespace=_NS,
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5),
)
PASS_CPU = Histogram(
    "pass_cpu_seconds",
    "CPU time of the thread that ran one loop (time.thread_time): beside loop_duration_seconds, the rest of a loop "
    "is time spent waiting: on round trips (AWS, the API server), for a core, or for the interpreter (other "
    "threads)",
    namespace=_NS,
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5),
)
LOOPS = Counter("loops", "Loops run, by outcome (ok, error)", ["outcome"], namespace=_NS, registry=REGISTRY)
PENDING_PODS = Gauge(
    "pending_pods", "Pods waiting for capacity at the last loop", namespace=_NS, registry=REGISTRY
)
UNSCHEDULABLE_PODS = Gauge(
    "unschedulable_pods",
    "Pending pods that fit in no group at the last loop",
    namespace=_NS,
    registry=REGISTRY,
)
NODES = Gauge(
    "nodes", "Nodes by state and group at the last loop", ["group", "state"], namespace=_NS, registry=REGISTRY
)
SCALE_UPS = Counter(
    "scale_up_nodes",
    "Nodes requested, by group and region",
    ["group", "region"],
    namespace=_NS,
    registry=REGISTRY,
)
FAILED_SCALE_UPS = Counter(
    "failed_scale_up_nodes",
    "Nodes that failed to launch, by group, region and reason",
    ["group", "region", "reason"],
    namespace=_NS,
    registry=REGISTRY,
)
DRIFTED_NODES = Gauge(
    "drifted_nodes",
    "nodes launched from an older launch template version or image than their group's (overdue: still busy past "
    "the drift deadline)",
    ["group", "overdue"],
    namespace=_NS,
    registry=REGISTRY,
)
BACKOFF = Gauge(
    "group_backoff",
    "1 while a group is backed off after a failed scale-up",
    ["group"],
    namespace=_NS,
    registry=REGISTRY,
)
EVICTIONS = Counter(
    "evictions",
    "Eviction requests, by result (evicted, refused)",
    ["result"],
    namespace=_NS,
    registry=REGISTRY,
)
TERMINATIONS = Counter(
    "terminations",
    "Instances terminated (with a decrement), by group",
    ["group"],
    namespace=_NS,
    registry=REGISTRY,
)
TAINTS = Counter(
    "taints",
    "Scale-down taints set (taint) and removed (untaint)",
    ["action"],
    namespace=_NS,
    registry=REGISTRY,
)
API_ERRORS = Counter(
    "api_errors",
    "Failed API calls, by API (aws, kubernetes), where (region or resource) and operation",
    ["api", "where", "operation"],
    namespace=_NS,
    registry=REGISTRY,
)
ABORTED_TERMINATIONS = Counter(
    "aborted_terminations",
    "Terminations called off because a fresh read did not prove the node empty, by group",
    ["group"],
    namespace=_NS,
    registry=REGISTRY,
)
UNPARSED_PODS = Gauge(
    "unparsed_pods",
    "Pods the snapshot parser rejected at the last loop (left out; a node they are bound to is never tainted)",
    namespace=_NS,
    registry=REGISTRY,
)
REMOVAL_BLOCKERS = Counter(
    "removal_blocking_pods",
    "Pods that stopped a node's removal, by cause: bound (found bound by a read or the pods watch after the taint: "
    "the removal was called off), unparsed (a pod the parser rejects on an otherwise idle node: never tainted), "
    "lost (bound between the last read and the Node's deletion)",
    ["cause"],
    namespace=_NS,
    registry=REGISTRY,
)
UNPARSED_NODES = Gauge(
    "unparsed_nodes",
    "Nodes the snapshot parser rejected at the last loop (kept, never scaled down)",
    namespace=_NS,
    registry=REGISTRY,
)
CACHE_AGE = Gauge(
    "cache_age_seconds",
    "Seconds since a watch cache was last confirmed current (a list, an event, a bookmark)",
    ["cache"],
    namespace=_NS,
    registry=REGISTRY,
)
AWS_UNREAD = Gauge(
    "aws_unreadable_regions",
    "Regions whose groups or scaling activities could not be read at the last loop",
    namespace=_NS,
    registry=REGISTRY,
)
LEADER = Gauge("leader", "1 while this replica holds the leader lease", namespace=_NS, registry=REGISTRY)
NOTIFICATIONS = Counter(
    "notifications",
    "Slack notifications, by result (sent, suppressed, failed)",
    ["result"],
    namespace=_NS,
    registry=REGISTRY,
)

EVENTS_DROPPED = Counter(
    "events_dropped",
    "Kubernetes Events not written, by reason (queue_full, spam_filter, api_error, rejected, shutdown)",
    ["reason"],
    namespace=_NS,
    registry=REGISTRY,
)
EVENTS_WRITTEN = Counter(
    "events_written",
    "Kubernetes Events written, by operation (create, patch: a repeat counted on the existing Event)",
    ["operation"],
    namespace=_NS,
    registry=REGISTRY,
)
EVENTS_QUEUED = Gauge(
    "events_queued", "Kubernetes Events waiting for the Event writer", namespace=_NS, registry=REGISTRY
)


def _text(start_response, status: str, body: str) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
    return [body.encode()]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


def make_app(healthy: Callable[[], tuple[bool, str]], ready: Callable[[], tuple[bool, str]]):
    """A WSGI app: /metrics from REGISTRY, /healthz and /readyz from the two callables (ok, reason)."""
    metrics = make_wsgi_app(REGISTRY)

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "/")
        if path in ("/healthz", "/readyz"):
            ok, reason = (healthy if path == "/healthz" else ready)()
            return _text(start_response, "200 OK" if ok else "503 Service Unavailable", reason + "\n")
        if path == "/metrics":
            return metrics(environ, start_response)
        return _text(start_response, "404 Not Found", "not found: try /metrics, /healthz or /readyz\n")

    return app


def serve(port: int, healthy, ready, host: str = "0.0.0.0") -> tuple[ThreadingWSGIServer, threading.Thread]:
    """Serve the app on ``host:port`` in a daemon thread; returns the server (``.shutdown()`` stops it)."""
    server = make_server(
        host, port, make_app(healthy, ready), ThreadingWSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return server, thread
