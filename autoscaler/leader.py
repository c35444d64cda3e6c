"""Leader election on a coordination.k8s.io/v1 Lease: of the replicas, exactly one acts.

As client-go's leaderelection does, a candidate never trusts another machine's clock: it takes over only after
the lease record has stayed unchanged for a whole ``lease_duration`` as measured by its OWN clock since it last
saw the record change. The holder considers itself leader only until ``renew_deadline`` (shorter than the lease
duration) after its last successful renewal, so it stops acting before anyone else may start. Every write is
guarded by the Lease's resourceVersion: of two candidates writing at once, one gets 409 Conflict and loses.

Fencing: the controller asks ``may_write(deadline)`` before every AWS write, and AWS writes carry their own
deadline (autoscaler.adapters.aws, ``write_timeout_s`` 4 s) shorter than ``lease_duration_s - renew_deadline_s``
(6 s): a write issued while this replica was leader ends, as its client sees it, before any other replica may act.
A request its client abandoned may still reach AWS later (no AWS API takes a fencing token; a signed request is
accepted for minutes): so a replica that takes the lease over from another holder writes nothing for
``takeover_delay_s`` more (``acting()`` is False meanwhile), and a write of the old leader that arrives within
``lease_duration_s - renew_deadline_s + takeover_delay_s`` of being sent lands before the new leader's first one.
Renewal runs on its own thread with its own API client, one request per renewal, each bounded by
``request_timeout_s``.

Why not ``kubernetes.leaderelection`` (the official Python client's, issue 16): its leader runs the work in a
callback thread and learns it lost the lease only when its renew loop gives up, ``renew_deadline`` after the
first failed attempt, which itself starts a retry period after the last success; its Lease requests have no
timeout, so one hung request keeps that loop (and the "leader") alive past the lease, while the other replica
takes over: two leaders. It reads before every renewal (two requests: at 5 s per request the lease is lost), it
measures with ``time.time()`` (a wall-clock step moves its deadlines), it offers no "may I still act" query to
fence writes with, and a leader that lost the lease never competes again (``run`` returns). This module follows
client-go's rules (observed-record timing on a monotonic clock) and adds what those lack.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from autoscaler import metrics
from clusterspec.names import LEASE_NAME

log = logging.getLogger("autoscaler.leader")


def _micro(t: float) -> str:
    return _sendable(datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def _sendable(micro_time: str | None) -> str | None:
    """A Lease time (a MicroTime: kube-apiserver parses exactly six fraction digits) that survives the client: the
    kubernetes client (37) validates the body into its V1Lease model and writes the time back with ``isoformat()``,
    which drops a zero fraction, and kube-apiserver refuses ``...T09:20:00+00:00`` (400, "cannot parse"). A time on
    a whole second is sent one microsecond later."""
    if micro_time and micro_time.endswith(".000000Z"):
        return micro_time[: -len("000000Z")] + "000001Z"
    return micro_time


class LeaderElector:
    def __init__(
        self,
        coordination,
        namespace: str,
        identity: str,
        *,
        name: str = LEASE_NAME,
        lease_duration_s: float = 20.0,
        renew_deadline_s: float = 14.0,
        retry_period_s: float = 2.0,
        request_timeout_s: float | None = None,
        takeover_delay_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        """``coordination``: a ``kubernetes.client.CoordinationV1Api`` (best on an ApiClient of its own, so
        renewals never wait for a connection behind the passes' calls). ``clock`` measures durations
        (monotonic); ``wall`` only stamps the Lease's times for people to read. ``request_timeout_s`` (default
        ``(renew_deadline_s - retry_period_s) / 2``) bounds each Lease request: renewal keeps the lease while
        requests take up to about half the renew deadline (a renewal counts from when it was SENT).
        ``takeover_delay_s``: after taking the lease over from a holder (not creating it), no write for that long."""
        if not renew_deadline_s < lease_duration_s:
            raise ValueError("the renew deadline must be shorter than the lease duration")
        self.api = coordination
        self.namespace = namespace
        self.identity = identity
        self.name = name
        self.lease_duration_s = lease_duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_period_s = retry_period_s
        self.request_timeout_s = request_timeout_s or max(0.5, (renew_deadline_s - retry_period_s) / 2)
        self._clock = clock
        self._wall = wall
        self._renewed_at: float | None = None
        self._observed: tuple | None = None
        self._observed_at = 0.0
        self._lease_cache: dict | None = None  # the Lease as our last write left it (its resourceVersion)
        self.takeover_delay_s = takeover_delay_s
        self._quiet_until: float | None = None  # after a takeover: no write before this (our clock)
        self._stop = threading.Event()
        metrics.LEADER.set_function(lambda: 1.0 if self.is_leader() else 0.0)

    def is_leader(self) -> bool:
        return self._renewed_at is not None and self._clock() - self._renewed_at < self.renew_deadline_s

    def time_left(self) -> float:
        """Seconds this replica may still act (0 when it is not the leader)."""
        if self._renewed_at is None:
            return 0.0
        return max(0.0, self.renew_deadline_s - (self._clock() - self._renewed_at))

    def may_write(self, deadline_s: float) -> bool:
        """Whether a write that takes up to ``deadline_s`` ends before any other replica may take over: the
        leadership check before every write (the fence). Another replica waits ``lease_duration_s`` after our
        last renewal; we act at most ``renew_deadline_s`` after it, so a write issued while leader that ends within
        ``lease_duration_s - renew_deadline_s`` always ends first."""
        return self.acting() and deadline_s < self.lease_duration_s - self.renew_deadline_s

    def acting(self) -> bool:
        """Leader, and past the quiet time after a takeover: passes run and may write."""
        return self.is_leader() and (self._quiet_until is None or self._clock() >= self._quiet_until)

    def quiet_left(self) -> float:
        """Seconds of the takeover's quiet time left (0 when none)."""
        return 0.0 if self._quiet_until is None else max(0.0, self._quiet_until - self._clock())

    def _lease(self) -> dict | None:
        try:
            resp = self.api.read_namespaced_lease(
                self.name, self.namespace, _preload_content=False, _request_timeout=self.request_timeout_s
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return json.loads(resp.data)

    def _write(self, body: dict, create: bool) -> float:
        """Create or replace the Lease; returns when the request was sent (the renewal counts from then)."""
        sent = self._clock()
        if create:
            resp = self.api.create_namespaced_lease(
                self.namespace, body, _preload_content=False, _request_timeout=self.request_timeout_s
            )
        else:
            resp = self.api.replace_namespaced_lease(
                self.name,
                self.namespace,
                body,
                _preload_content=False,
                _request_timeout=self.request_timeout_s,
            )
        self._lease_cache = json.loads(resp.data)
        return sent

    def _body(self, spec: dict, resource_version: str | None) -> dict:
        meta = {"name": self.name, "namespace": self.namespace}
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}

    def _renew_spec(self, old: dict) -> dict:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration_s),
            "renewTime": _micro(self._wall()),
            "acquireTime": _sendable(old.get("acquireTime")) or _micro(self._wall()),
            "leaseTransitions": old.get("leaseTransitions") or 0,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this replica holds the lease afterwards. A leader renews with one request
        (the Lease it last wrote, guarded by its resourceVersion); only a conflict or a candidate reads first."""
        try:
            cached = self._lease_cache
            if cached is not None and self._renewed_at is not None and self.is_leader():
                try:
                    old = cached.get("spec") or {}
                    body = self._body(self._renew_spec(old), cached["metadata"]["resourceVersion"])
                    return self._won(self._write(body, False))
                except ApiException as e:
                    if e.status != 409:
                        raise
                    self._lease_cache = None  # someone else wrote: read, then decide
            lease = self._lease()
            if lease is None:  # no one held it: nothing of a previous leader can still arrive
                return self._won(self._write(self._body(self._renew_spec({}), None), True), takeover=False)
            now = (
                self._clock()
            )  # the record was read by now: another's renewal counts from here at the earliest
            old = lease.get("spec") or {}
            record = (old.get("holderIdentity"), old.get("renewTime"), old.get("leaseTransitions"))
            if record != self._observed:
                self._observed, self._observed_at = record, now
            holder = old.get("holderIdentity")
            if holder and holder != self.identity and now - self._observed_at < self.lease_duration_s:
                self._lost()
                return False
            spec = self._renew_spec(old)
            if holder != self.identity:
                spec["acquireTime"] = spec["renewTime"]
                spec["leaseTransitions"] = (old.get("leaseTransitions") or 0) + 1
            return self._won(self._write(self._body(spec, lease["metadata"]["resourceVersion"]), False))
        except ApiException as e:
            if e.status != 409:  # 409: another replica wrote first
                metrics.API_ERRORS.labels("kubernetes", "lease", "renew").inc()
                log.warning("lease update failed", extra={"status": e.status, "reason": e.reason})
            self._lease_cache = None
            return self.is_leader()
        except Exception as e:  # noqa: BLE001 - a network error or a timeout: leadership lasts to the deadline
            metrics.API_ERRORS.labels("kubernetes", "lease", "renew").inc()
            log.warning("lease update failed", extra={"error": str(e)})
            return self.is_leader()

    def _won(self, sent_at: float, takeover: bool = True) -> bool:
        if not self.is_leader():
            # taken over from a holder (another replica, or this one before a restart, or one that released it):
            # a write it abandoned may still arrive, so ours wait (the fence, may_write)
            self._quiet_until = (
                sent_at + self.takeover_delay_s if takeover and self.takeover_delay_s else None
            )
            log.info("became leader", extra={"identity": self.identity,
                                             "first_write_in_s": self.takeover_delay_s if self._quiet_until else 0})  # fmt: skip
        self._renewed_at = max(sent_at, self._renewed_at or sent_at)
        return True

    def _lost(self) -> None:
        if self._renewed_at is not None:
            log.info("lost the lease", extra={"identity": self.identity})
        self._renewed_at = None
        self._lease_cache = None

    def release(self) -> None:
        """Give the lease up on shutdown so another replica takes over at once."""
        if not self.is_leader():
            return
        self._renewed_at = None
        try:
            lease = self._lease()
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["leaseDurationSeconds"] = 1
                self.api.replace_namespaced_lease(
                    self.name, self.namespace, lease, _request_timeout=self.request_timeout_s
                )
        except Exception as e:  # noqa: BLE001 - the lease simply expires instead
            log.warning("lease release failed", extra={"error": str(e)})

    def run(self) -> None:
        """Renew (or try to acquire) until ``stop()``: a new attempt ``retry_period_s`` after the previous one
        STARTED (at once when it took longer), so slow requests do not stretch the interval between renewals."""
        while not self._stop.is_set():
            started = self._clock()
            self.try_acquire_or_renew()
            self._stop.wait(max(0.0, self.retry_period_s - (self._clock() - started)))
        self.release()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
