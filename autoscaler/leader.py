"""Leader election on a coordination.k8s.io/v1 Lease: of the replicas, exactly one acts.

As client-go's leaderelection does, a candidate never trusts another machine's clock: it takes over only after
the lease record has stayed unchanged for a whole ``lease_duration`` as measured by its OWN clock since it last
saw the record change. The holder considers itself leader only until ``renew_deadline`` (shorter than the lease
duration) after its last successful renewal, so it stops acting before anyone else may start. Every write is
guarded by the Lease's resourceVersion: of two candidates writing at once, one gets 409 Conflict and loses.
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

log = logging.getLogger("autoscaler.leader")

LEASE_NAME = "research-autoscaler"


def _micro(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        coordination,
        namespace: str,
        identity: str,
        *,
        name: str = LEASE_NAME,
        lease_duration_s: float = 15.0,
        renew_deadline_s: float = 10.0,
        retry_period_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        """``coordination``: a ``kubernetes.client.CoordinationV1Api``. ``clock`` measures durations (monotonic);
        ``wall`` only stamps the Lease's times for people to read."""
        if not renew_deadline_s < lease_duration_s:
            raise ValueError("the renew deadline must be shorter than the lease duration")
        self.api = coordination
        self.namespace = namespace
        self.identity = identity
        self.name = name
        self.lease_duration_s = lease_duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_period_s = retry_period_s
        self._clock = clock
        self._wall = wall
        self._renewed_at: float | None = None
        self._observed: tuple | None = None
        self._observed_at = 0.0
        self._stop = threading.Event()

    def is_leader(self) -> bool:
        return self._renewed_at is not None and self._clock() - self._renewed_at < self.renew_deadline_s

    def _lease(self) -> dict | None:
        try:
            resp = self.api.read_namespaced_lease(self.name, self.namespace, _preload_content=False)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return json.loads(resp.data)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this replica holds the lease afterwards."""
        now = self._clock()
        try:
            lease = self._lease()
            spec = {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration_s),
                "renewTime": _micro(self._wall()),
            }
            if lease is None:
                spec |= {"acquireTime": _micro(self._wall()), "leaseTransitions": 0}
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}  # fmt: skip
                self.api.create_namespaced_lease(self.namespace, body)
            else:
                old = lease.get("spec") or {}
                record = (old.get("holderIdentity"), old.get("renewTime"), old.get("leaseTransitions"))
                if record != self._observed:
                    self._observed, self._observed_at = record, now
                holder = old.get("holderIdentity")
                if holder and holder != self.identity and now - self._observed_at < self.lease_duration_s:
                    self._lost()
                    return False
                if holder == self.identity:
                    spec["acquireTime"] = old.get("acquireTime") or spec["renewTime"]
                    spec["leaseTransitions"] = old.get("leaseTransitions") or 0
                else:
                    spec["acquireTime"] = spec["renewTime"]
                    spec["leaseTransitions"] = (old.get("leaseTransitions") or 0) + 1
                meta = lease["metadata"]
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.namespace,
                                     "resourceVersion": meta["resourceVersion"]},
                        "spec": spec}  # fmt: skip
                self.api.replace_namespaced_lease(self.name, self.namespace, body)
        except ApiException as e:
            if e.status != 409:  # 409: another replica wrote first
                metrics.API_ERRORS.labels("kubernetes", "lease", "renew").inc()
                log.warning("lease update failed", extra={"status": e.status, "reason": e.reason})
            return self.is_leader()
        except Exception as e:  # noqa: BLE001 - a network error: keep leadership only until the deadline
            metrics.API_ERRORS.labels("kubernetes", "lease", "renew").inc()
            log.warning("lease update failed", extra={"error": str(e)})
            return self.is_leader()
        if not self.is_leader():
            log.info("became leader", extra={"identity": self.identity})
        self._renewed_at = now
        metrics.LEADER.set(1)
        return True

    def _lost(self) -> None:
        if self._renewed_at is not None:
            log.info("lost the lease", extra={"identity": self.identity})
        self._renewed_at = None
        metrics.LEADER.set(0)

    def release(self) -> None:
        """Give the lease up on shutdown so another replica takes over at once."""
        if not self.is_leader():
            return
        self._renewed_at = None
        metrics.LEADER.set(0)
        try:
            lease = self._lease()
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["leaseDurationSeconds"] = 1
                self.api.replace_namespaced_lease(self.name, self.namespace, lease)
        except Exception as e:  # noqa: BLE001 - the lease simply expires instead
            log.warning("lease release failed", extra={"error": str(e)})

    def run(self) -> None:
        """Renew (or try to acquire) every retry period until ``stop()``."""
        while not self._stop.is_set():
            self.try_acquire_or_renew()
            self._stop.wait(self.retry_period_s)
        self.release()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
