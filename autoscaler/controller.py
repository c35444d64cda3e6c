"""The control loop's one pass: snapshot, plan, act, through the two interfaces (autoscaler.interfaces).

``Controller.run_once()`` never sleeps and never reads the system clock: time comes from the injected clock
(an object with ``now()`` or a callable; seconds since the epoch or an aware datetime), so the simulator runs it
on a virtual clock and the live process on the wall clock (:mod:`autoscaler.loop` schedules the passes).

Crash safety: everything a pass needs is in the cluster or re-derived from the cloud. The planner's per-group
failure state and the time failures were last read are persisted in the state ConfigMap after each pass; the
scale-down progress is on the nodes themselves (the to-be-deleted taint and annotations), so a restart between
taint and terminate resumes (or undoes) the removal rather than forgetting the node. A failed call is logged,
counted and skipped; the rest of the pass goes on.

Nothing that deletes trusts a cache (docs/autoscaler.md, "What it guarantees"): before an instance is terminated,
a fresh read from the API (not the watch caches) must show its node still tainted by us and running no pod but
DaemonSet and mirror pods, or, for an instance the snapshot shows without a Node, that no Node names it. A Node
the snapshot parser rejects is kept in the snapshot as a stand-in that is never scaled down, so its instance never
looks unregistered. While a cache is older than ``max_cache_age_s`` or a region's groups could not be read, no
scale-down starts. Desired capacity is never lowered below the group's live instances (AWS would choose which
instance dies); instances leave only by TerminateInstanceInAutoScalingGroup on that instance.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from autoscaler import metrics
from autoscaler.core.config import PlannerConfig
from autoscaler.core.errors import SnapshotError
from autoscaler.core.failures import GONE_STATES
from autoscaler.core.names import TO_BE_DELETED_SINCE_ANNOTATION
from autoscaler.core.planner import CANCELLED
from autoscaler.core.planner import plan as make_plan
from autoscaler.core.scaledown import VANISHED
from autoscaler.core.snapshot import ParseCache, parse_snapshot
from autoscaler.core.timeutil import parse_time, show_time
from autoscaler.interfaces import Cloud, Cluster
from autoscaler.options import parse_duration
from clusterspec.names import (
    CORDONED_BY_AUTOSCALER_ANNOTATION,
    DRIFTED_TAINT,
    NODE_GROUP_LABEL,
    POD_SCALE_UP_DELAY_ANNOTATION,
    SCALE_DOWN_ABORTED_ANNOTATION,
    SCALE_DOWN_DISABLED_ANNOTATION,
    TO_BE_DELETED_TAINT,
    TO_BE_DELETED_TAINTS,
)

log = logging.getLogger("autoscaler.controller")

STATE_GROUPS = "group_state"  # keys of the persisted state (the state ConfigMap's data)
STATE_FAILURES_READ = "failures_read_until"
STATE_REMOVING = "removing"  # instances being removed: {id: {group, node, at, terminated}}
STATE_SHORTFALL = "shortfall_since"  # {group: since when its desired capacity has more than its instances}
# An instance we terminated that a listing still shows live is taken as terminating for this long at most
# (cluster-autoscaler's MaxCloudProviderNodeDeletionTime, core/scaledown/actuation/delete_in_batch.go)
REMOVAL_MEMORY_S = 300.0
EVENT_REPEAT_S = 600.0  # the same event on the same pod at most this often
# a pass that changes nothing in the state ConfigMap but its failures watermark writes it at most this often, and
# one that changes nothing in the status ConfigMap but its summary's time writes that at most this often
STATE_WATERMARK_EVERY_S = 30.0
STATUS_EVERY_S = 10.0
_BAD_OBJECT = re.compile(r"^(?:snapshot\.)?(pods|nodes|groups)\[(\d+)\]")


@dataclass
class ControllerConfig:
    """The live side's knobs. The defaults here are the simulator's (a model that is consistent at once and has no
    binder racing a removal); ``autoscaler run`` sets the live ones (autoscaler.service)."""

    planner: PlannerConfig = field(default_factory=PlannerConfig)
    regions: list[str] = field(default_factory=list)  # spill-over order; groups' other regions go last
    dry_run: bool = False
    failure_lookback_s: float = 900.0  # without persisted state: how far back to read failed activities
    max_events_per_loop: int = 500  # pod Events written per pass; the rest go out in the next passes
    max_cache_age_s: float = 120.0  # no scale-down starts while a watch cache is older than this
    # a node is terminated only once tainted and cordoned this long (cluster-autoscaler's
    # --node-delete-delay-after-taint); the live process: at least a scan interval, so for a full pass
    delete_delay_after_taint_s: float = 0.0
    # a node whose removal a fresh read called off is not tainted again before this (cluster-autoscaler's
    # --unremovable-node-recheck-timeout, 5 minutes)
    unremovable_recheck_s: float = 300.0
    # pending pods younger than this trigger no scale-up (cluster-autoscaler's --new-pod-scale-up-delay)
    new_pod_scale_up_delay_s: float = 0.0
    # a scale-up whose new nodes cost more than this many dollars an hour (a group with no known price: any) is
    # confirmed by a fresh read of the pending pods first; None: never
    confirm_scale_up_above: float | None = None
    # a listing that still shows a group as it was before our own write of this long ago is taken as stale
    aws_consistency_window_s: float = 0.0


@dataclass
class LoopResult:
    """What one pass saw, decided and did (``plan`` is ``Plan.to_dict()``; None when planning failed)."""

    now: datetime
    plan: dict | None = None
    actions: list[dict] = field(default_factory=list)  # what was done (or, in dry-run, would be done)
    errors: list[str] = field(default_factory=list)
    pending_pods: int = 0
    events_written: int = 0
    aws_unread: list[str] = field(default_factory=list)  # regions whose groups or failures could not be read
    unparsed_nodes: list[str] = field(default_factory=list)  # Nodes the parser rejected (kept as stand-ins)
    held: list[str] = field(
        default_factory=list
    )  # what was deliberately not done this pass, and why (no error)
    # wall seconds of the pass's phases, for the pass log line and autoscaler_pass_phase_seconds (metrics.PASS_PHASE)
    phase_s: dict[str, float] = field(default_factory=dict)
    cpu_s: float = 0.0  # CPU seconds of the thread that ran the pass (metrics.PASS_CPU), once it ended
    cpu_from: float = field(default_factory=time.thread_time)  # that thread's CPU time when the pass began
    process_cpu_from: float = field(default_factory=time.process_time)  # and the process's (every thread)

    @contextlib.contextmanager
    def timed(self, phase: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phase_s[phase] = self.phase_s.get(phase, 0.0) + time.perf_counter() - start

    @property
    def ok(self) -> bool:
        return self.plan is not None


def _parse_iso(value: str | None) -> datetime | None:
    """The time, or None when it is missing or malformed (persisted state is never trusted blindly)."""
    return parse_time(value, "", [])


def _key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _instance_id(node: dict) -> str | None:
    provider = (node.get("spec") or {}).get("providerID") or ""
    return provider.rstrip("/").rsplit("/", 1)[-1] if provider.startswith("aws://") else None


def _has_taint(node: dict, key: str) -> bool:
    return any(t.get("key") == key for t in (node.get("spec") or {}).get("taints") or [])


def _marked(node: dict) -> bool:
    """Carries a to-be-deleted taint (cluster-autoscaler's key, or the project's earlier one)."""
    return any(_has_taint(node, key) for key in TO_BE_DELETED_TAINTS)


def _untaint_keys(node: dict | None) -> list[str]:
    """The to-be-deleted keys to remove from NODE: those it carries, at least the current one."""
    keys = [k for k in TO_BE_DELETED_TAINTS if node is not None and _has_taint(node, k)]
    return keys or [TO_BE_DELETED_TAINT]


def _parameters(fn) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _taint_time(node: dict) -> datetime | None:
    """When our to-be-deleted taint was set (its value: unix seconds), or None."""
    for t in (node.get("spec") or {}).get("taints") or []:
        if t.get("key") in TO_BE_DELETED_TAINTS:
            try:
                return datetime.fromtimestamp(float(t.get("value")), UTC)
            except (TypeError, ValueError, OverflowError):
                return None
    return None


def _ready(node: dict) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return True  # as the parser takes a node without conditions


def _holds_node(pod: dict) -> bool:
    """Whether a pod bound to a node keeps it: anything running but DaemonSet and mirror pods."""
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    owners = {r.get("kind") for r in meta.get("ownerReferences") or [] if isinstance(r, dict)}
    return "DaemonSet" not in owners and "kubernetes.io/config.mirror" not in (meta.get("annotations") or {})


def _stand_in(raw: object) -> dict | None:
    """What is left of a Node the parser rejected: its name, labels and providerID, no capacity, and the
    scale-down-disabled annotation. It keeps its instance registered and is never scaled down; None when even
    the name is unreadable."""
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return None
    labels = meta.get("labels")
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        labels = {}
    spec = raw.get("spec") if isinstance(raw.get("spec"), dict) else {}
    provider = spec.get("providerID")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": dict(labels),
            "annotations": {SCALE_DOWN_DISABLED_ANNOTATION: "true"},
        },
        "spec": {"providerID": provider} if isinstance(provider, str) else {},
        "status": {"allocatable": {}},
    }


class Controller:
    def __init__(
        self,
        cluster: Cluster,
        cloud: Cloud,
        config: ControllerConfig | PlannerConfig,
        clock,
        *,
        may_act: Callable[[], bool] | None = None,
        notifier=None,
    ):
        """``may_act`` is asked before every change (leader election: a replica that lost the lease stops
        mid-pass); ``notifier`` (autoscaler.notify) hears of scale-ups and unschedulable pods."""
        self.cluster = cluster
        self.cloud = cloud
        self.config = config if isinstance(config, ControllerConfig) else ControllerConfig(planner=config)
        self._clock = clock
        self._started = self.now()  # nodes created after it: the pods watch saw every pod bound to them
        self._may_act = may_act or (lambda: True)
        self._notifier = notifier
        self._events_sent: dict[tuple[str, str], tuple[str, datetime]] = {}
        self._write_failures: dict[str, dict] = {}  # group -> a refused SetDesiredCapacity, for the next plan
        self._departed: dict[str, dict] = {}  # NotReady Nodes of instances that left their group (this pass)
        self._unparsed: dict[str, str | None] = {}  # Nodes the parser rejected -> their instance (this pass)
        self._unparsed_unnamed = (
            False  # a rejected Node without a readable name: no instance looks unregistered
        )
        self._since: datetime | None = None  # failures were read from here (this pass)
        self._fresh_nodes: list[dict] | None = None  # Nodes read from the API this pass (not the cache)
        self._last_error: Exception | None = None
        self.last: LoopResult | None = None
        # what our own writes left, for listings that do not show them yet (AWS is eventually consistent):
        # group -> (desired the listing showed before our writes, desired after them, when)
        self._writes: dict[str, tuple[int, int, datetime]] = {}
        # instance -> {group, node, at, terminated}: being removed by us. cluster-autoscaler keeps its deletions in
        # progress in memory (NodeDeletionTracker, core/scaledown/deletiontracker) and registers each finished one
        # with its cluster state for MaxCloudProviderNodeDeletionTime; ours is persisted in the state ConfigMap
        self._removing: dict[str, dict] = {}
        self._shortfall: dict[str, datetime] = {}  # group -> since when desired exceeds its instances
        self._persisted = (
            False  # the last pass wrote the state ConfigMap (else it is read back, e.g. a takeover)
        )
        self._raise: dict[str, int] = {}  # group -> its desired, below its live instances (this pass)
        self._listed_desired: dict[str, int] = {}  # group -> desired as listed this pass
        self._raw_nodes: dict[str, dict] = {}  # Nodes as this pass's cache has them (our cordon visible)
        self._rejected_on: dict[str, list[str]] = {}  # node -> pods on it the parser rejected (this pass)
        self._blocked_seen: set[tuple[str, str]] = set()  # (node, pod) reported as blocking a removal
        self._node_events: dict[
            tuple[str, str], tuple[str, datetime]
        ] = {}  # (node, reason) -> (message, when)
        self._hold_up: str | None = None  # why no scale-up may be sent this pass
        self._placements: dict[str, str] = {}  # pod -> where this pass's plan puts it
        # pending pod -> (group, node slot) the last plan launches or keeps launching a node for; and per group, when
        # pods placed so vanished (one entry per slot): the launches the plan may cancel (_only_vanished_cancels)
        self._bought_for: dict[str, tuple[str, str]] = {}
        self._vanished: dict[str, list[datetime]] = {}
        self._vanished_last: dict[str, datetime] = {}  # group -> when pods bought for in it last vanished
        self._node_states: dict[str, str] = {}  # node -> its state in this pass's plan
        self._pods_by_node: dict[str, str] | None = None  # node -> a pod holding it (built when needed)
        self._snapshot_pods: list[dict] = []
        self._pass_pods: tuple[list, dict] = ([], {})  # this pass's pods and the same by key
        self._pending_of: tuple[list, list] = ([], [])  # this pass's pods and the pending ones among them
        self._tried: set[str] = set()  # instances whose termination this pass tried
        self._state_data: dict[str, str] = {}  # the state ConfigMap's data as last read or written
        # what _persist last wrote of the state and of the status, and when
        self._state_written: tuple[dict[str, str], datetime] | None = None
        self._status_written: tuple[dict[str, str], datetime] | None = None
        # the last pass's parsed pods and nodes: a pass parses only the objects its caches changed since
        self._parse_cache = ParseCache()

    # -- time -----------------------------------------------------------------------------------------------
    def now(self) -> datetime:
        t = self._clock.now() if hasattr(self._clock, "now") else self._clock()
        if isinstance(t, int | float):
            return datetime.fromtimestamp(t, UTC)
        return t if t.tzinfo else t.replace(tzinfo=UTC)

    # -- one pass -----------------------------------------------------------------------------------------
    def run_once(self) -> LoopResult:
        result = LoopResult(now=self.now())
        try:
            snapshot = self._snapshot(result)
            if snapshot is not None:
                with result.timed("plan"):
                    result.plan = self._plan(snapshot, result)
            if result.plan is not None:
                with result.timed("confirm"):
                    result.plan = self._confirmed(result.plan, snapshot, result)
            if result.plan is not None:
                result.pending_pods = len(self._pending_in(snapshot["pods"]))
                self._act(result.plan, snapshot, result, self._only_vanished_cancels)
                with result.timed("observe"):
                    self._observe(result.plan, snapshot, result)
        except Exception as e:  # noqa: BLE001 - one bad pass must not end the process; logged and counted
            result.errors.append(f"pass failed: {type(e).__name__}: {e}")
            log.exception("pass failed")
        metrics.AWS_UNREAD.set(len(result.aws_unread))
        for phase, seconds in result.phase_s.items():
            metrics.PASS_PHASE.labels(phase).observe(seconds)
        result.cpu_s = time.thread_time() - result.cpu_from
        metrics.PASS_CPU.observe(result.cpu_s)
        metrics.LOOPS.labels("ok" if result.ok and not result.errors else "error").inc()
        self._pass_pods, self._pending_of = ([], {}), ([], [])
        self.last = result
        return result

    def standing_by(self) -> None:
        """This replica does not act now (it lost or waits for the Lease): another may write the state, so the next
        pass reads it instead of trusting its memory."""
        self._persisted = False
        self._state_written = None

    def _call(self, result: LoopResult, what: str, fn, *args):
        """Run one API call; on failure log, count and record it, and return None."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - every API error is counted and the pass goes on
            result.errors.append(f"{what}: {e}")
            log.warning("call failed", extra={"call": what, "error": str(e)})
            return None

    def snapshot(self) -> dict:
        """The snapshot a pass would plan on (``autoscaler snapshot``); read-only."""
        snap = self._snapshot(LoopResult(now=self.now()))
        return snap or {}

    def _snapshot(self, result: LoopResult) -> dict | None:
        now = result.now
        with result.timed("state"):
            # after our own write the state is what we wrote (one writer: the leader), and the ConfigMap may hold an
            # older failures watermark (_persist writes it at most every STATE_WATERMARK_EVERY_S when nothing else
            # changed); otherwise whoever acted left the truth, read
            if self._persisted:
                state = dict(self._state_data)
            else:
                state = self._call(result, "read state", self.cluster.read_state) or {}
        try:
            group_state = json.loads(state.get(STATE_GROUPS) or "{}")
        except ValueError:
            result.errors.append("state ConfigMap: group_state is not JSON; starting without failure state")
            group_state = {}
        since = _parse_iso(state.get(STATE_FAILURES_READ)) or now - timedelta(
            seconds=self.config.failure_lookback_s
        )
        self._state_data = dict(state)
        if not self._persisted:  # a first pass, or we did not act last time: whoever acted left the truth
            self._load_state(state, result)
        self._hold_up, self._rejected_on = None, {}
        with result.timed("cluster"):
            pods = self._call(result, "list pods", self.cluster.list_pods)
            nodes = self._call(result, "list nodes", self.cluster.list_nodes)
            pdbs = self._call(result, "list pdbs", self.cluster.list_pdbs) or []
            # claims, volumes and classes (kube-scheduler's VolumeBinding): a cluster that cannot list them (the
            # simulator's) gives snapshots without them, in which claims are not checked (docs/snapshot.md)
            storage = (
                self._call(result, "list storage", self.cluster.list_storage)
                if hasattr(self.cluster, "list_storage")
                else {}
            )
        with result.timed("aws"):
            groups = self._call(result, "list groups", self.cloud.list_groups)
        if pods is None or nodes is None or groups is None or storage is None:
            return None
        pods = self._old_enough(pods, now, result)
        groups = self._as_we_left_them(groups, now)
        names = {g["name"] for g in groups}
        self._since = since
        with result.timed("aws"):
            failures = self._call(result, "scaling failures", self.cloud.scaling_failures, since)
        if failures is None:
            result.aws_unread.append("*")
        failures = list(failures or [])
        result.aws_unread.extend(sorted(getattr(self.cloud, "unread_regions", None) or ()))
        for region in result.aws_unread:
            if region != "*":
                result.errors.append(f"AWS {region}: groups or scaling activities could not be read")
        refused, self._write_failures = self._write_failures, {}
        failures.extend(f for f in refused.values() if f["group"] in names)
        failures.extend(self._phantoms(groups, now))
        nodes = self._without_departed(nodes, groups)
        self._raw_nodes = {
            n["metadata"]["name"]: n
            for n in nodes
            if isinstance(n, dict) and isinstance(n.get("metadata"), dict)
        }
        nodes = [_without_our_cordon(n) for n in nodes]
        regions = list(self.config.regions)
        for g in groups:
            if g["region"] not in regions:
                regions.append(g["region"])
        vanished = self._vanished_capacity(nodes, names)
        snapshot = {
            "now": show_time(now),
            "regions": regions,
            "pods": pods,
            "nodes": nodes,
            "pdbs": pdbs,
            **storage,
            "groups": groups,
            "scaling_failures": [f for f in failures if f["group"] in names],
            "group_state": {k: v for k, v in group_state.items() if k in names},
            **({"vanished": vanished} if vanished else {}),
        }
        return snapshot

    def _vanished_capacity(self, nodes: list[dict], groups: set[str]) -> dict | None:
        """The groups where pods bought for vanished while pending within a boot timeout, and the nodes no pod has
        landed on: created after this process started (so its pods watch saw every pod bound
        to them) and never shown a pod bound to them. The planner gives such empty nodes back at once
        (core/scaledown.py, VANISHED). None when nothing vanished or the cluster adapter cannot tell."""
        horizon = self.now() - timedelta(seconds=self.config.planner.boot_timeout_s)
        recent = {g for g, t in self._vanished_last.items() if t > horizon and g in groups}
        landed_nodes = getattr(self.cluster, "landed_nodes", None)
        if not recent or landed_nodes is None:
            return None
        present = {(n.get("metadata") or {}).get("name") for n in nodes if isinstance(n, dict)}
        landed = landed_nodes({p for p in present if p})
        unused = []
        for n in nodes:
            meta = n.get("metadata") if isinstance(n, dict) else None
            created = _parse_iso((meta or {}).get("creationTimestamp"))
            if meta and created is not None and created > self._started and meta.get("name") not in landed:
                unused.append(meta["name"])
        # every unused node of such a group: one bought for pods that found room elsewhere is as idle (the slots
        # of _vanished, which cancellations consume one by one, undercount nodes bought over several passes)
        owed = {g: len(unused) for g in recent}
        return {"groups": owed, "unused_nodes": sorted(unused)} if unused else None

    # -- what the listings do not show yet, and what they should not -------------------------------------------
    def _load_state(self, state: dict[str, str], result: LoopResult) -> None:
        """The removals in progress and the shortfalls being timed, as the last acting pass persisted them."""
        try:
            removing = json.loads(state.get(STATE_REMOVING) or "{}")
            shortfall = json.loads(state.get(STATE_SHORTFALL) or "{}")
        except ValueError:
            result.errors.append("state ConfigMap: removing or shortfall_since is not JSON; starting without")
            return
        if isinstance(removing, dict):
            self._removing = {k: v for k, v in removing.items() if isinstance(v, dict) and v.get("group")}
        if isinstance(shortfall, dict):
            self._shortfall = {g: t for g, v in shortfall.items() if (t := _parse_iso(v)) is not None}

    def _old_enough(self, pods: list[dict], now: datetime, result: LoopResult) -> list[dict]:
        """The pods less the pending ones younger than ``new_pod_scale_up_delay_s`` or their own longer
        ``cluster-autoscaler.kubernetes.io/pod-scale-up-delay``: cluster-autoscaler's ``filterOutYoungPods``
        (core/static_autoscaler.go), which leaves such pods out of the scale-up (a shorter annotation is ignored)."""
        floor = self.config.new_pod_scale_up_delay_s
        young: set[int] = set()
        pending = []
        # the pending pods, in one comprehension (a pass at 50,000 pods pays for each step per pod): most pods are
        # bound, and the nodeName test rules them out first
        for p in [p for p in pods if _pending_pod(p)]:
            delay = floor
            meta = p.get("metadata") or {}
            asked = (meta.get("annotations") or {}).get(POD_SCALE_UP_DELAY_ANNOTATION)
            if asked:  # as cluster-autoscaler: a bad or shorter annotation leaves the flag's delay
                with contextlib.suppress(ValueError):
                    delay = max(floor, parse_duration(str(asked)))
            if delay > 0:
                created = _parse_iso(meta.get("creationTimestamp"))
                if created is not None and (now - created).total_seconds() < delay:
                    young.add(id(p))
                    continue
            pending.append(p)
        if young:
            result.held.append(
                f"{len(young)} pending pod(s) younger than their scale-up delay left out of this plan"
            )
            pods = [p for p in pods if id(p) not in young]
        self._pending_of = (pods, pending)
        return pods

    def _pending_in(self, pods: list[dict]) -> list[dict]:
        """The pending pods of ``pods``, a list of this pass's snapshot: worked out once per list (_old_enough
        does it for the pass's first)."""
        listed, pending = self._pending_of
        if listed is not pods:
            pending = [p for p in pods if _pending_pod(p)]
            self._pending_of = (pods, pending)
        return pending

    def _as_we_left_them(self, groups: list[dict], now: datetime) -> list[dict]:
        """The groups as AWS will show them once it is consistent with our own writes: a listing that still shows a
        group's desired capacity as it was before our write of less than ``aws_consistency_window_s`` ago gets our
        value (cluster-autoscaler's AWS provider likewise keeps the size it set, asgCache ``setAsgSizeNoLock``, but
        only until the next refresh); an instance we are removing is shown Terminating until the listing shows it
        going, so it is neither capacity nor an instance that never registered. A desired capacity below the live
        instances (a deposed leader's late write, a console edit) is planned from the live instances and written
        back (``_raise``): AWS would otherwise keep desired below what runs, and every later plan would be off."""
        window = self.config.aws_consistency_window_s
        self._listed_desired, self._raise = {}, {}
        states: dict[str, str] = {}
        out = []
        for g in groups:
            g = dict(g)
            name = g["name"]
            self._listed_desired[name] = g["desired"]
            wrote = self._writes.get(name)
            if wrote is not None:
                before, after, at = wrote
                if (now - at).total_seconds() < window and g["desired"] == before:
                    g["desired"] = after
                else:
                    del self._writes[name]  # AWS caught up, or someone else changed it since
            instances = []
            for i in g.get("instances") or []:
                state = str(i.get("state") or "InService").lower()
                states[i["id"]] = state
                if i["id"] in self._removing and state not in GONE_STATES:
                    i = {**i, "state": "Terminating"}
                instances.append(i)
            g["instances"] = instances
            live = sum(1 for i in instances if str(i.get("state") or "InService").lower() not in GONE_STATES)
            if g["desired"] < min(live, g["max"]):
                self._raise[name] = g["desired"]
                g["desired"] = min(live, g["max"])
            out.append(g)
        names = {g["name"] for g in groups}
        for iid, r in list(self._removing.items()):
            at = _parse_iso(r.get("at")) or now
            if r.get("group") in names and states.get(iid, "terminated") in GONE_STATES:
                del self._removing[iid]  # its (listed) group no longer lists it live
            elif r.get("terminated") and (now - at).total_seconds() > REMOVAL_MEMORY_S:
                del self._removing[iid]  # listed live long after it was terminated: AWS says it is there
        return out

    def _phantoms(self, groups: list[dict], now: datetime) -> list[dict]:
        """Desired capacity with no instance behind it is upcoming capacity only for the boot timeout: then it is a
        failure of its group (the planner backs it off, brings desired back to what exists and spills its pods over),
        as cluster-autoscaler turns the gap into placeholder instances (cloudprovider/aws, asgCache
        ``createPlaceholdersForDesiredNonStartedInstances``) that become long-unregistered after
        --max-node-provision-time, and fixes a size that stayed wrong that long (``fixNodeGroupSize``)."""
        timeout = self.config.planner.boot_timeout_s
        out = []
        for g in groups:
            name = g["name"]
            live = sum(
                1 for i in g.get("instances") or [] if str(i.get("state") or "").lower() not in GONE_STATES
            )
            short = g["desired"] - live
            if short <= 0:
                self._shortfall.pop(name, None)
                continue
            since = self._shortfall.setdefault(name, now)
            waited = (now - since).total_seconds()
            if waited >= timeout:
                out.append({
                    "group": name, "region": g.get("region", ""), "reason": "never-registered", "at": show_time(now),
                    "missing": short,
                    "message": f"desired {g['desired']} but {live} instance(s) for {waited:.0f}s: {short} never "
                               f"launched within the boot timeout ({timeout:g}s) and no failed activity says why",
                })  # fmt: skip
                self._shortfall[name] = now  # reported; the next report after another boot timeout
        return out

    def _without_departed(self, nodes: list[dict], groups: list[dict]) -> list[dict]:
        """Leave out the NotReady Nodes of instances that left their (listed) group, after a spot interruption
        or an outside termination: they are no capacity and must not keep the group's desired size up (the cloud
        node controller deletes such Nodes; ``_forget_removed_nodes`` deletes the ones we tainted)."""
        listed = {i["id"] for g in groups for i in g.get("instances") or [] if isinstance(i, dict)}
        names = {g["name"] for g in groups}
        kept, self._departed = [], {}
        for n in nodes:
            meta = n.get("metadata") if isinstance(n, dict) else None
            labels = (meta or {}).get("labels") if isinstance((meta or {}).get("labels"), dict) else {}
            instance = _instance_id(n) if isinstance(n.get("spec"), dict) else None
            if (
                instance
                and labels.get(NODE_GROUP_LABEL) in names
                and instance not in listed
                and not _ready(n)
            ):
                self._departed[meta["name"]] = n
                continue
            kept.append(n)
        return kept

    def _plan(self, snapshot: dict, result: LoopResult, again: bool = False) -> dict | None:
        """The plan. Objects the snapshot parser rejects (a pod with a malformed quantity...) are logged,
        counted and left out, so one bad object does not stop the autoscaler; a rejected Node is replaced by a
        stand-in (``_stand_in``) so its instance does not look unregistered. Any other problem fails the pass.
        ``again``: a second plan of this pass's snapshot (already cleaned, its stand-ins known)."""
        if not again:
            self._unparsed, self._unparsed_unnamed = {}, False
        for attempt in range(2):
            try:
                planned = make_plan(parse_snapshot(snapshot, self._parse_cache), self.config.planner)
                self._placements = planned.placements  # where each pod goes (not in the plan's dict: large)
                if not attempt and not again:
                    metrics.UNPARSED_PODS.set(0)
                return planned.to_dict()
            except SnapshotError as e:
                lines = str(e).splitlines()
                result.errors.extend(lines)
                bad: dict[str, set[int]] = {}
                for line in lines:
                    log.warning("snapshot problem", extra={"problem": line})
                    metrics.API_ERRORS.labels("snapshot", "snapshot", "parse").inc()
                    m = _BAD_OBJECT.match(line)
                    if m:
                        bad.setdefault(m.group(1), set()).add(int(m.group(2)))
                if attempt or not all(_BAD_OBJECT.match(line) for line in lines):
                    return None
                # a node a rejected pod is bound to is not proven empty: it is not tainted while that pod is there
                metrics.UNPARSED_PODS.set(len(bad.get("pods", ())))
                for i in sorted(bad.get("pods", ())):
                    raw = snapshot["pods"][i]
                    where = (raw.get("spec") or {}).get("nodeName") if isinstance(raw, dict) else None
                    if isinstance(where, str) and where:
                        why = next(
                            (ln for ln in lines if ln.startswith(f"pods[{i}]")), "rejected by the parser"
                        )
                        self._rejected_on.setdefault(where, []).append(f"{_key(raw)}: {why}")
                for i in sorted(bad.pop("nodes", ())):
                    raw = snapshot["nodes"][i]
                    stand_in = _stand_in(raw)
                    if stand_in is None:
                        self._unparsed_unnamed = True
                        bad.setdefault("nodes", set()).add(i)
                        continue
                    name = stand_in["metadata"]["name"]
                    self._unparsed[name] = _instance_id(stand_in)
                    snapshot["nodes"][i] = stand_in
                    log.warning(
                        "node rejected by the parser; kept as a stand-in that is never scaled down",
                        extra={"node": name},
                    )
                snapshot.update(
                    {k: [o for i, o in enumerate(snapshot[k]) if i not in idx] for k, idx in bad.items()}
                )
            finally:
                result.unparsed_nodes = sorted(self._unparsed)
                metrics.UNPARSED_NODES.set(len(self._unparsed) + int(self._unparsed_unnamed))
        return None

    def _confirmed(self, plan: dict, snapshot: dict, result: LoopResult) -> dict:
        """The plan, once a scale-up above ``confirm_scale_up_above`` dollars an hour is confirmed: a fresh read of the
        pending pods (not the cache, which may still hold pods deleted a moment ago, or lag behind a watch) must show
        the pods it buys for. Pods the read no longer shows pending are left out and the pass plans again, so no
        instance is bought for a pod that is gone. When the read fails, no scale-up is sent this pass."""
        limit = self.config.confirm_scale_up_above
        up = plan.get("scale_up") or {}
        read = getattr(self.cluster, "read_pending_pods", None)
        if limit is None or not up or read is None or self.config.dry_run:
            return plan
        prices = {g["name"]: g.get("price_per_hour") for g in snapshot["groups"]}
        cost = sum(n * (prices.get(g) if prices.get(g) is not None else float("inf")) for g, n in up.items())
        if cost <= limit:
            return plan
        shown = f"${cost:,.2f}/h" if cost != float("inf") else "an unknown price"
        bought_for = {k for k, where in self._placements.items() if where.startswith("new:")}
        try:
            # the adapter reads the pods bought for by name when they are few, else lists the pending ones
            fresh = read(keys=sorted(bought_for)) if "keys" in _parameters(read) else read()
        except Exception as e:  # noqa: BLE001 - what cannot be confirmed is not bought
            self._hold_up = f"the pending pods could not be read to confirm a scale-up of {shown} ({e})"
            result.errors.append(f"scale-up held: {self._hold_up}")
            return plan
        there = {(_key(p), (p.get("metadata") or {}).get("uid")) for p in fresh if isinstance(p, dict)}
        pending = self._pending_in(snapshot["pods"])
        vanished = {
            k for p in pending
            if (k := _key(p)) in bought_for and (k, (p.get("metadata") or {}).get("uid")) not in there
        }  # fmt: skip
        if not vanished:
            return plan
        nodes = sum(up.values())
        result.held.append(
            f"a scale-up of {nodes} node(s) ({shown}) planned again: {len(vanished)} of the pods it was "
            f"for are no longer pending by a fresh read"
        )
        log.warning("scale-up planned again without vanished pods",
                    extra={"nodes": nodes, "vanished": len(vanished), "cost_per_hour": cost})  # fmt: skip
        snapshot["pods"] = [p for p in snapshot["pods"] if _key(p) not in vanished]
        self._pending_of = (snapshot["pods"], [p for p in pending if _key(p) not in vanished])
        again = self._plan(snapshot, result, again=True)
        if again is None:
            self._hold_up = "the plan without the vanished pods failed"
            return plan
        return again

    def _only_vanished_cancels(self, plan: dict, snapshot: dict, result: LoopResult) -> None:
        """Keep the plan's cancellations of launching instances (the planner's ``CANCELLED``) only for capacity
        bought for pods that have vanished since (deleted while pending): per group, up to one per node slot that
        earlier plans launched or kept launching for such pods, for a boot timeout. Capacity bought for pods that
        found room elsewhere is left to the next pods: cancelling it would make them wait a new boot."""
        now = result.now
        present = {_key(p): p for p in snapshot["pods"] if isinstance(p, dict)}
        self._pass_pods = (snapshot["pods"], present)  # for _act's Events: one key per pod and pass
        slots: dict[str, set[str]] = {}
        for key, (group, slot) in self._bought_for.items():
            if key not in present:
                slots.setdefault(group, set()).add(slot)
        for group, gone in slots.items():
            self._vanished.setdefault(group, []).extend([now] * len(gone))
            self._vanished_last[group] = now
        horizon = now - timedelta(seconds=self.config.planner.boot_timeout_s)
        self._vanished = {
            g: kept for g, ts in self._vanished.items() if (kept := [t for t in ts if t > horizon])
        }
        self._bought_for = {
            k: (where.split(":", 2)[1], where)
            for k, where in self._placements.items()
            if where.startswith(("new:", "upcoming:"))
        }
        # and pods placed on a node that registered since this process started (bought for them, most likely):
        # if they vanish, that node may go back (only if no pod ever landed on it: _vanished_capacity)
        for k, where in self._placements.items():
            raw = self._raw_nodes.get(where) if k not in self._bought_for else None
            meta = (raw or {}).get("metadata") or {}
            group = (meta.get("labels") or {}).get(NODE_GROUP_LABEL)
            created = _parse_iso(meta.get("creationTimestamp"))
            if group and created is not None and created > self._started:
                self._bought_for[k] = (group, where)
        kept_actions = []
        for step in plan.get("scale_down") or ():
            if step.get("action") == "taint" and step.get("reason") == VANISHED:
                owed = self._vanished.get(step.get("group") or "")
                if owed:  # the slot this node was bought for is given back with it
                    owed.pop()
            if step.get("reason") == CANCELLED and step.get("node") is None:
                allowed = self._vanished.get(step.get("group") or "")
                if not allowed:
                    (plan.get("node_reasons") or {}).pop(step.get("instance_id"), None)
                    continue
                allowed.pop()
            kept_actions.append(step)
        plan["scale_down"] = kept_actions

    # -- acting ----------------------------------------------------------------------------------------------
    def execute(self, plan: dict, snapshot: dict) -> LoopResult:
        """Carry out ``plan`` (``Plan.to_dict()``) on the world ``snapshot`` describes: the acting half of a pass."""
        result = LoopResult(now=self.now(), plan=plan)
        self._raw_nodes = {n["metadata"]["name"]: n for n in snapshot.get("nodes") or []}
        self._listed_desired = {g["name"]: g.get("desired") for g in snapshot.get("groups") or []}
        self._act(plan, snapshot, result)
        return result

    def _act(self, plan: dict, snapshot: dict, result: LoopResult, after_scale_up=None) -> None:
        """``after_scale_up(plan, snapshot, result)``: what may change the plan's other steps, run once the desired
        capacities are written (a pass's decision reaches AWS first; nothing it does changes them)."""
        with result.timed("scale_up"):
            groups = self._scale_up(plan, snapshot, result)
        if after_scale_up is not None:
            with result.timed("plan"):
                after_scale_up(plan, snapshot, result)
        with result.timed("act"):
            self._act_rest(plan, snapshot, groups, result)
        with result.timed("persist"):
            self._persist(plan, snapshot, result)

    def _scale_up(self, plan: dict, snapshot: dict, result: LoopResult) -> dict:
        """Adopt unprotected groups and write every group's desired capacity (the pass's first writes)."""
        groups = {g["name"]: g for g in snapshot["groups"]}
        unprotected = getattr(self.cloud, "unprotected_groups", None)
        for group in unprotected() if unprotected is not None else []:
            if group in groups:  # adopt it: no lowering of its desired capacity may pick one of its instances
                self._do(result, {"action": "protect", "group": group}, self.cloud.protect, group)
        wanted = dict(plan.get("desired") or {})
        for group in sorted(set(wanted) | set(self._raise)):
            g = groups.get(group, {})
            if (
                group in self._raise
            ):  # AWS shows desired below the live instances: written back at least to them
                self._set_desired(
                    group, wanted.get(group, g.get("desired")), g, result, current=self._raise[group]
                )
            else:
                self._set_desired(group, wanted[group], g, result)
        return groups

    def _act_rest(self, plan: dict, snapshot: dict, groups: dict, result: LoopResult) -> None:
        """Scale-down steps, removals under way, node annotations and the plan's Events."""
        nodes = {n["metadata"]["name"]: n for n in snapshot["nodes"]}
        hold = self._scale_down_hold(result)
        self._fresh_nodes, self._tried = None, set()
        self._node_states = plan.get("node_states") or {}
        self._pods_by_node = None
        self._snapshot_pods = snapshot["pods"]
        for step in plan.get("scale_down") or []:
            if hold and step.get("action") in ("taint", "terminate"):
                result.errors.append(
                    f"{step['action']} {step.get('node') or step.get('instance_id')}: held, {hold}"
                )
                continue
            self._scale_down(step, nodes, groups, result)
        if not hold:
            self._finish_removals(groups, result)
        for node, wanted_annotations in sorted((plan.get("annotations") or {}).items()):
            self._do(result, {"action": "annotate", "node": node, "annotations": wanted_annotations},
                     self.cluster.annotate_node, node, wanted_annotations)  # fmt: skip
        self._forget_removed_nodes({**self._departed, **nodes}, groups, result)
        events = plan.get("events") or []
        # the pods the plan's Events name, from the pass's map of its pods (_only_vanished_cancels keys each once)
        named = {e.get("pod") for e in events}
        listed, by_key = self._pass_pods
        if listed is not snapshot["pods"]:  # not this pass's (execute): keyed here
            by_key = {_key(p): p for p in snapshot["pods"] if isinstance(p, dict)} if named else {}
        pods = {k: by_key[k] for k in named if k in by_key}
        for event in events:
            self._event(event, pods.get(event.get("pod", "")), result)
        if len(self._events_sent) > 4 * max(1, len(snapshot["pods"])):  # forget pods that are gone
            live = {_key(p) for p in snapshot["pods"]}
            self._events_sent = {k: v for k, v in self._events_sent.items() if k[0] in live}

    def _set_desired(
        self, group: str, desired: int, g: dict, result: LoopResult, current: int | None = None
    ) -> None:
        """Set a group's desired capacity, never below its live instances: lowering it further would let AWS
        choose which instances to terminate (instances leave only by TerminateInstanceInAutoScalingGroup). A
        refusal (ValidationError, a deleted launch template...) becomes a failure of that group in the next plan,
        which backs it off and spills its pods over; the other groups go on. ``current``: what AWS shows when it
        is not the snapshot's (a desired below the live instances, planned from them)."""
        raised = current is not None
        current = g.get("desired") if current is None else current
        live = sum(
            1 for i in g.get("instances") or [] if str(i.get("state", "InService")).lower() not in GONE_STATES
        )
        floor = min(live, g.get("max", live))
        if current is not None and desired < current and desired < live:
            result.errors.append(
                f"set_desired {group}: the plan lowers it to {desired}, below its {live} live instance(s); kept at"
                f" {live} (instances are removed one by one)"
            )
            desired = live
        if raised and desired < floor:
            desired = floor
        if current is not None and desired > current and self._hold_up:
            if not raised or current >= floor:
                result.errors.append(f"set_desired {group} {current}->{desired}: held, {self._hold_up}")
                return
            desired = floor  # the scale-up is held; the correction back to the live instances is not
        if current == desired:
            return
        action = {"action": "set_desired", "group": group, "from": current, "desired": desired}
        if raised:
            action["reason"] = f"desired {current} was below the {live} live instance(s)"
        done = self._do(result, action, self.cloud.set_desired, group, desired)
        up = current is not None and desired > current
        if done and not self.config.dry_run:
            self._wrote(group, desired, result.now)
        if done and raised:
            self._group_event("DesiredBelowInstances", f"Group {group}: desired capacity {current} was below its "
                              f"{live} live instance(s) (a late or outside write); set to {desired}", "Warning")  # fmt: skip
        elif done and up:
            self._group_event("ScaledUpGroup", f"Scale-up: setting group {group} size to {desired} instead of "
                              f"{current} (max: {g.get('max')})")  # fmt: skip
        if done or self.config.dry_run:
            return
        err = self._last_error
        if up and err is not None:
            self._group_event("FailedToScaleUpGroup", f"Scale-up failed for group {group}: {err}", "Warning")
        if getattr(err, "permanent", False) and current is not None and desired > current:
            self._write_failures[group] = {
                "group": group,
                "region": g.get("region", ""),
                "reason": "unknown",
                "message": f"SetDesiredCapacity {desired} refused: {err}"[:500],
                "at": show_time(result.now),
                "missing": desired - current,
            }

    def _wrote(self, group: str, desired: int, now: datetime) -> None:
        """Remember our write of ``desired`` against the value the listing showed before it (kept across writes
        within the consistency window), for listings that do not show it yet."""
        wrote = self._writes.get(group)
        within = wrote is not None and (now - wrote[2]).total_seconds() < self.config.aws_consistency_window_s
        before = wrote[0] if within else self._listed_desired.get(group, desired)
        self._writes[group] = (before, desired, now)

    def _believed_desired(self, group: str, g: dict) -> int | None:
        wrote = self._writes.get(group)
        return wrote[1] if wrote is not None else g.get("desired")

    def _scale_down_hold(self, result: LoopResult) -> str | None:
        """Why no scale-down may start now (a stale cache, a region that could not be read), or None."""
        if result.aws_unread:
            return "AWS could not be read in " + ", ".join(
                r if r != "*" else "some region" for r in result.aws_unread
            )
        ages = getattr(self.cluster, "cache_ages", None)
        for name, age in sorted((ages() if ages else {}).items()):
            if age is None or age > self.config.max_cache_age_s:
                shown = "never synced" if age is None else f"{age:.0f} s old"
                return f"the {name} cache is {shown} (bound {self.config.max_cache_age_s:g} s)"
        return None

    def _do(self, result: LoopResult, action: dict, fn, *args) -> bool:
        """Record ``action`` and, unless dry-run (or no longer the leader), carry it out."""
        self._last_error = None
        if self.config.dry_run:
            result.actions.append({**action, "dry_run": True})
            return True
        if not self._may_act():
            result.errors.append(f"{action['action']}: skipped, not the leader")
            return False
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - counted, logged, and the pass goes on
            self._last_error = e
            result.actions.append({**action, "ok": False, "error": str(e)})
            result.errors.append(f"{action['action']} {action.get('group') or action.get('node')}: {e}")
            log.warning("action failed", extra={**action, "error": str(e)})
            return False
        result.actions.append({**action, "ok": True})
        log.info("action", extra=action)
        return True

    def _scale_down(self, step: dict, nodes: dict, groups: dict, result: LoopResult) -> None:
        """One scale-down step of the plan."""
        node, action = step.get("node"), step["action"]
        base = {"action": action, "node": node, "group": step.get("group"), "reason": step.get("reason", "")}
        if action == "taint":
            if node in self._unparsed:
                return
            held = self._taint_hold(node, nodes.get(node), result)
            if held:
                result.held.append(f"taint {node}: {held}")
                return
            taint = {
                "key": TO_BE_DELETED_TAINT,
                "value": str(int(result.now.timestamp())),
                "effect": "NoSchedule",
            }
            mark = getattr(self.cluster, "mark_for_removal", None)  # taint and cordon in one write
            if self._do(result, base, mark or self.cluster.taint_node, node, taint):
                metrics.TAINTS.labels("taint").inc()
        elif action == "untaint":
            annotations = None
            if self._node_states.get(node) == "busy" and _marked(nodes.get(node) or {}):
                # a pod was bound to it after the taint (the cache shows it): a binder here ignores the taint and
                # the cordon, so the removal is called off and remembered like one a fresh read called off
                pod = self._pod_on(node)
                if pod:
                    annotations = {SCALE_DOWN_ABORTED_ANNOTATION: f"{show_time(result.now)}; pod {pod}"}
                    metrics.REMOVAL_BLOCKERS.labels("bound").inc()
                    self._node_event(node, "ScaleDownAborted", f"removal called off: pod {pod} was bound to it "
                                     "after it was tainted", "Warning", result.now)  # fmt: skip
            if self._unmark(node, nodes.get(node), base, result, annotations):
                metrics.TAINTS.labels("untaint").inc()
        elif action == "terminate":
            self._terminate(step, base, nodes.get(node), result)
        elif action == "mark-drifted":  # a soft taint: new pods prefer current nodes; nothing is evicted
            if node not in self._unparsed:
                taint = {
                    "key": DRIFTED_TAINT,
                    "value": str(step.get("version") or ""),
                    "effect": "PreferNoSchedule",
                }
                self._do(result, base, self.cluster.taint_node, node, taint)
        elif action == "unmark-drifted":
            self._do(result, base, self.cluster.untaint_node, node, DRIFTED_TAINT)
        else:
            result.errors.append(f"scale_down {node}: unknown action {action!r}")

    def _pod_on(self, name: str) -> str | None:
        """The first pod (by key) the cache shows holding the node; the map is built once per pass, when needed."""
        if self._pods_by_node is None:
            self._pods_by_node = {}
            for p in self._snapshot_pods:
                where = (p.get("spec") or {}).get("nodeName")
                if (
                    where
                    and _holds_node(p)
                    and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                ):
                    key = _key(p)
                    if key < self._pods_by_node.get(where, "\uffff"):
                        self._pods_by_node[where] = key
        return self._pods_by_node.get(name)

    def _unmark(self, name: str, node: dict | None, base: dict, result: LoopResult,
                annotations: dict[str, str | None] | None = None) -> bool:  # fmt: skip
        """Take the removal back: the to-be-deleted taints off, our cordon lifted, ``annotations`` merged."""
        unmark = getattr(self.cluster, "unmark", None)
        keys = _untaint_keys(node)
        if unmark is not None:
            return self._do(result, base, unmark, name, keys, annotations)
        done = all([self._do(result, base, self.cluster.untaint_node, name, key) for key in keys])
        if done and annotations:
            self._do(result, {"action": "annotate", "node": name, "annotations": annotations},
                     self.cluster.annotate_node, name, annotations)  # fmt: skip
        return done

    def _taint_hold(self, name: str, node: dict | None, result: LoopResult) -> str | None:
        """Why the node must not be tainted now: a pod on it the parser rejects (it is not proven empty: reported
        on the node, never tainted while the pod is there), or a removal a fresh read called off less than
        ``unremovable_recheck_s`` ago (cluster-autoscaler's --unremovable-node-recheck-timeout), so that a node
        the planner keeps finding empty is not tainted and untainted pass after pass."""
        blocked = self._rejected_on.get(name)
        if blocked:
            message = f"not removed: pod {blocked[0]} on it could not be parsed, so it is not proven empty"
            self._node_event(name, "ScaleDownBlocked", message, "Warning", result.now)
            for pod in blocked:
                if (name, pod) not in self._blocked_seen:
                    self._blocked_seen.add((name, pod))
                    metrics.REMOVAL_BLOCKERS.labels("unparsed").inc()
            return message
        annotations = ((node or {}).get("metadata") or {}).get("annotations") or {}
        aborted = annotations.get(SCALE_DOWN_ABORTED_ANNOTATION)
        at = _parse_iso(str(aborted).split(";", 1)[0].strip()) if aborted else None
        if at is not None:
            until = at + timedelta(seconds=self.config.unremovable_recheck_s)
            if result.now < until:
                why = str(aborted).split(";", 1)[1].strip() if ";" in str(aborted) else "a fresh read"
                return f"its removal was called off at {show_time(at)} ({why}); not tainted again before {show_time(until)}"
        return None

    def _node_event(self, name: str, reason: str, message: str, kind: str, now: datetime) -> None:
        """An Event on the Node (``kubectl describe node``), the same one at most every ``EVENT_REPEAT_S``."""
        record = getattr(self.cluster, "record_node_event", None)
        if record is None or self.config.dry_run or not self._may_act():
            return
        last = self._node_events.get((name, reason))
        if last and last[0] == message and (now - last[1]).total_seconds() < EVENT_REPEAT_S:
            return
        node = self._raw_nodes.get(name) or {"metadata": {"name": name}}
        try:
            record(node, reason, message, kind)
        except Exception as e:  # noqa: BLE001 - an Event never fails a decision
            log.warning("node event not queued", extra={"node": name, "reason": reason, "error": str(e)})
            return
        self._node_events[(name, reason)] = (message, now)
        if len(self._node_events) > 10_000:
            self._node_events = dict(list(self._node_events.items())[-5_000:])

    def _terminate(self, step: dict, base: dict, node: dict | None, result: LoopResult) -> None:
        """Remove a node proven empty, closing the window between the proof and the termination as far as the API
        allows: the node tainted and cordoned for ``delete_delay_after_taint_s`` (a full pass) and shown so by this
        pass's cache; a fresh read of the Node and its pods; no pod event on it seen by the watch since that read;
        a last read of its pods; then the Node deleted, guarded by the uid and resourceVersion of the fresh read
        (no kube-scheduler binds to a Node that is gone), and only then the instance terminated with a decrement.
        What remains possible (docs/autoscaler.md, "What it guarantees"): a pod bound, by a binder that ignores
        the taint and the cordon, between the last read and the deletion; it is reported."""
        name, group = step.get("node"), step.get("group")
        instance = step.get("instance_id") or (_instance_id(node) if node else None)
        what = name or instance
        if not group or not instance:
            result.errors.append(f"terminate {what}: the plan names no group or instance; left alone")
            return
        if name in self._unparsed or instance in self._unparsed.values():
            result.errors.append(f"terminate {what}: its Node was rejected by the parser; left alone")
            return
        dead = node is not None and not _ready(node)  # planned as dead: NotReady past the unready timeout
        fresh = None
        if not self.config.dry_run:
            if node is not None and not dead:
                waiting = self._taint_wait(name, result.now)
                if waiting:
                    result.held.append(f"terminate {name}: {waiting}")
                    return
            mark_at = getattr(self.cluster, "pod_event_mark", lambda: None)()
            problem, fresh, holding = self._fresh_check(name, instance, node, result)
            if problem is None and node is not None:
                problem, holding = self._seen_since(name, mark_at, dead)
            if problem is None and node is not None:
                problem, holding = self._last_read(name, dead)
            if problem:
                self._called_off(name, instance, group, node, fresh, holding, problem, dead, result)
                return
        if node is not None:
            if not self.config.dry_run:
                self._removing[instance] = {"group": group, "node": name, "at": show_time(result.now),
                                            "terminated": False}  # fmt: skip
                # recorded before the Node goes: a crash or a takeover right after the deletion finishes the removal
                # instead of finding an instance without a Node (which would look like one that never registered)
                if not self._may_act() or not self._call(result, "record removal", self._record_removal):
                    self._removing.pop(instance, None)
                    result.errors.append(
                        f"terminate {name}: the removal could not be recorded; left for next pass"
                    )
                    return
            meta = (fresh or {}).get("metadata") or {}
            if not self._do(result, {"action": "delete_node", "node": name}, self._delete_node, name,
                            meta.get("uid"), meta.get("resourceVersion")):  # fmt: skip
                self._removing.pop(instance, None)  # the Node is still there: planned again next pass
                return
            if not self.config.dry_run:
                self._lost_in_removal(name, dead, result)
        self._terminate_instance(group, instance, base, result)

    def _terminate_instance(self, group: str, instance: str, base: dict, result: LoopResult) -> bool:
        """TerminateInstanceInAutoScalingGroup with a decrement; remembered, so that a listing that still shows the
        instance (AWS is eventually consistent) neither counts it as capacity nor as an instance that never
        registered. A failed call is retried in the next passes (``_finish_removals``)."""
        self._tried.add(instance)
        if not self._do(result, {**base, "action": "terminate", "instance_id": instance},
                        self.cloud.terminate_instance, group, instance):  # fmt: skip
            return False
        if not self.config.dry_run:
            metrics.TERMINATIONS.labels(group).inc()
            entry = self._removing.setdefault(instance, {"group": group, "node": base.get("node")})
            entry.update({"at": show_time(result.now), "terminated": True})
            g_desired = self._believed_desired(group, {"desired": self._listed_desired.get(group)})
            if g_desired is not None:
                self._wrote(group, max(0, g_desired - 1), result.now)
        return True

    def _finish_removals(self, groups: dict, result: LoopResult) -> None:
        """Terminate the instances whose Node we deleted but whose termination failed (or a crash or a takeover
        cut short), once a fresh list of Nodes still names none for them (a kubelet that registered again keeps its
        instance)."""
        pending = {
            i: r
            for i, r in self._removing.items()
            if not r.get("terminated") and r.get("group") in groups and i not in self._tried
        }
        if not pending or self.config.dry_run:
            return
        try:
            if self._fresh_nodes is None:
                self._fresh_nodes = self._read("read_nodes", lambda: self.cluster.list_nodes())
        except Exception as e:  # noqa: BLE001 - retried next pass
            result.errors.append(f"finish removals: the Nodes could not be read ({e})")
            return
        named = {_instance_id(n) for n in self._fresh_nodes if isinstance(n, dict)}
        for instance, r in sorted(pending.items()):
            if instance in named:
                self._removing.pop(
                    instance, None
                )  # its kubelet registered again: not ours to remove any more
                continue
            base = {"action": "terminate", "node": r.get("node"), "group": r["group"],
                    "reason": "its Node was deleted for removal; terminating it again"}  # fmt: skip
            self._terminate_instance(r["group"], instance, base, result)

    def _delete_node(self, name: str, uid: str | None, resource_version: str | None) -> None:
        """Delete the Node; where the cluster can, only the Node as the fresh read saw it (DeleteOptions
        preconditions: an untaint, an uncordon or a re-registration since makes the deletion fail)."""
        if (uid or resource_version) and "resource_version" in _parameters(self.cluster.delete_node):
            return self.cluster.delete_node(name, uid, resource_version)
        return self.cluster.delete_node(
            name
        )  # an adapter without preconditions (the model: the truth already)

    def _taint_wait(self, name: str, now: datetime) -> str | None:
        """Why a tainted node may not be terminated yet: this pass's cache must show our taint (and our cordon),
        set at least ``delete_delay_after_taint_s`` ago (cluster-autoscaler waits --node-delete-delay-after-taint,
        5 s, in ``deleteNodesAsync`` before its last check), so that every scheduler has seen both for a pass."""
        cached = self._raw_nodes.get(name)
        if cached is None or not _marked(cached):
            return "the node cache does not show the taint yet"
        meta = cached.get("metadata") or {}
        if CORDONED_BY_AUTOSCALER_ANNOTATION in (meta.get("annotations") or {}) and not (
            cached.get("spec") or {}
        ).get("unschedulable"):
            return "the node cache does not show the cordon yet"
        since = _parse_iso(
            (meta.get("annotations") or {}).get(TO_BE_DELETED_SINCE_ANNOTATION)
        ) or _taint_time(cached)
        delay = self.config.delete_delay_after_taint_s
        if since is not None and (now - since).total_seconds() < delay:
            return f"tainted {(now - since).total_seconds():.0f} s ago; removed {delay:g} s after the taint at the earliest"
        return None

    # -- fresh reads before terminating -------------------------------------------------------------------------
    def _read(self, method: str, fallback, *args):
        """A read from the API itself (the cluster's ``read_*``), never a cache; adapters that have no cache
        (the cluster model) offer only ``list_*``, which is the truth there."""
        fn = getattr(self.cluster, method, None)
        return fn(*args) if fn is not None else fallback(*args)

    def _pods_on(self, name: str) -> list[dict]:
        return self._read(
            "read_pods_on_node",
            lambda n: [p for p in self.cluster.list_pods() if (p.get("spec") or {}).get("nodeName") == n],
            name,
        )

    @staticmethod
    def _holding(pods: list[dict], dead: bool) -> list[dict]:
        """The pods that keep a node. A dead node's pods that the control plane is already deleting (the taint
        manager evicted them after their toleration; a Job has replaced them) do not; any other pod may still run
        behind a network partition, so it does: a running job is never killed, on that path either."""
        return [
            p for p in pods
            if isinstance(p, dict) and _holds_node(p) and not (dead and (p.get("metadata") or {}).get("deletionTimestamp"))
        ]  # fmt: skip

    def _fresh_check(
        self, name: str | None, instance: str, node: dict | None, result: LoopResult
    ) -> tuple[str | None, dict | None, list[dict]]:
        """(why the instance must not be terminated now, the Node as read, the pods that hold it) by a fresh read;
        the reason is None when it may be."""
        try:
            if node is None:  # an instance with no Node in the cache: no Node may name it
                if self._unparsed_unnamed:
                    return (
                        "a Node the parser rejected has no readable name; it may be this instance's",
                        None,
                        [],
                    )
                if self._fresh_nodes is None:
                    self._fresh_nodes = self._read("read_nodes", lambda: self.cluster.list_nodes())
                for n in self._fresh_nodes:
                    if isinstance(n, dict) and _instance_id(n) == instance:
                        return f"a fresh read finds its Node {n['metadata'].get('name')}", None, []
                return None, None, []
            fresh = self._read(
                "read_node",
                lambda n: next((x for x in self.cluster.list_nodes() if x["metadata"]["name"] == n), None),
                name,
            )
            if fresh is None:
                return "its Node is gone by a fresh read; planned again next pass", None, []
            dead = not _ready(node)  # planned as dead: still NotReady?
            if dead and _ready(fresh):
                return "Ready again by a fresh read", fresh, []
            if not dead and not _marked(fresh):
                return "no longer carries the to-be-deleted taint by a fresh read", fresh, []
            meta = fresh.get("metadata") or {}
            if CORDONED_BY_AUTOSCALER_ANNOTATION in (meta.get("annotations") or {}) and not (
                fresh.get("spec") or {}
            ).get("unschedulable"):
                return "uncordoned by someone else since it was marked, by a fresh read", fresh, []
            pods = self._pods_on(name)
        except Exception as e:  # noqa: BLE001 - what cannot be read is not proven empty
            return f"the API could not be read to prove it empty ({e})", None, []
        holding = self._holding(pods, dead)
        if not holding:
            return None, fresh, []
        shown = ", ".join(sorted(_key(p) for p in holding)[:5])
        return f"a fresh read finds pods on it ({shown})", fresh, holding

    def _seen_since(self, name: str, mark: int | None, dead: bool) -> tuple[str | None, list[dict]]:
        """Any pod the pods watch showed bound to the node since the fresh read began calls the removal off."""
        seen_on = getattr(self.cluster, "pods_seen_on", None)
        if seen_on is None or mark is None:
            return None, []
        seen = seen_on(name, mark)
        if seen is None:
            return "more pod events came since the fresh read than are kept, so none can be ruled out", []
        holding = self._holding(seen, dead)
        if not holding:
            return None, []
        shown = ", ".join(sorted({_key(p) for p in holding})[:5])
        return f"the pods watch shows pods bound to it since the fresh read ({shown})", holding

    def _last_read(self, name: str, dead: bool) -> tuple[str | None, list[dict]]:
        """The node's pods read once more, just before its Node is deleted."""
        try:
            holding = self._holding(self._pods_on(name), dead)
        except Exception as e:  # noqa: BLE001 - what cannot be read is not proven empty
            return f"the API could not be read to prove it empty ({e})", []
        if not holding:
            return None, []
        shown = ", ".join(sorted(_key(p) for p in holding)[:5])
        return f"the last read before deleting its Node finds pods on it ({shown})", holding

    def _called_off(self, name, instance, group, node, fresh, holding, problem, dead, result) -> None:  # noqa: PLR0913
        """A removal a read called off: reported (the error, a Warning Event on the Node naming the pod, the
        metrics), and for a live node the taint and our cordon taken back, with the time and the pod recorded on
        the node so that it is not tainted again for ``unremovable_recheck_s``."""
        what = name or instance
        if holding:
            problem += "; it may still run them" if dead else "; untainted"
        result.errors.append(f"terminate {what}: {problem}; left alone")
        log.warning("termination aborted", extra={"node": name, "instance": instance, "error": problem})
        metrics.ABORTED_TERMINATIONS.labels(group).inc()
        uncordoned = fresh is not None and problem.startswith("uncordoned by someone else")
        if (not holding and not uncordoned) or node is None:
            return
        if holding:
            metrics.REMOVAL_BLOCKERS.labels("bound").inc(len({_key(p) for p in holding}))
            why = "pod " + sorted(_key(p) for p in holding)[0]
        else:  # someone wants the node: our mark is taken back too, and the node left alone for the recheck time
            why = "uncordoned by someone else"
        self._node_event(name, "ScaleDownAborted", f"removal called off: {problem}", "Warning", result.now)
        if dead:
            return
        annotations = {TO_BE_DELETED_SINCE_ANNOTATION: None,
                       SCALE_DOWN_ABORTED_ANNOTATION: f"{show_time(result.now)}; {why}"}  # fmt: skip
        base = {"action": "untaint", "node": name, "reason": f"removal called off by a fresh read: {why}"}
        if self._unmark(name, fresh, base, result, annotations):
            metrics.TAINTS.labels("untaint").inc()

    def _lost_in_removal(self, name: str, dead: bool, result: LoopResult) -> None:
        """After the Node's deletion: a pod bound to it between the last read and the deletion (a binder that ignores
        the taint and the cordon) is what no Kubernetes API lets us rule out; it is reported (an Event on the pod, the
        metric, an error of the pass). Kubernetes deletes the pods of a deleted Node (the pod garbage collector)."""
        try:
            lost = self._holding(self._pods_on(name), dead)
        except Exception:  # noqa: BLE001 - a report only
            return
        for p in lost:
            message = f"bound to node {name} as the autoscaler deleted that Node (after its last read found it empty)"
            result.errors.append(f"delete_node {name}: pod {_key(p)} {message}")
            metrics.REMOVAL_BLOCKERS.labels("lost").inc()
            if not self.config.dry_run and self._may_act():
                self._call(result, f"event on {_key(p)}", self.cluster.record_event, p, "NodeRemovedUnderPod",
                           message, "Warning")  # fmt: skip

    def _forget_removed_nodes(self, nodes: dict, groups: dict, result: LoopResult) -> None:
        """Delete Nodes we tainted whose instance has left its (listed) group: a pass that ended between
        terminate and delete."""
        listed = {i["id"] for g in groups.values() for i in g.get("instances") or []}
        by_name = {g["name"] for g in groups.values()}
        for name, node in sorted(nodes.items()):
            group = ((node.get("metadata") or {}).get("labels") or {}).get(NODE_GROUP_LABEL)
            instance = _instance_id(node)
            if group in by_name and instance and instance not in listed and _marked(node):
                self._do(result, {"action": "delete_node", "node": name, "reason": "instance already terminated"},
                         self.cluster.delete_node, name)  # fmt: skip

    def _event(self, event: dict, pod: dict | None, result: LoopResult) -> None:
        """Hand a pod Event of the plan to the cluster. The live adapter only queues it (its Event writer writes,
        aggregates and rate-limits on a thread of its own: autoscaler.adapters.events), so the pass never waits
        on an Event write; the same Event on the same pod goes out at most every ``EVENT_REPEAT_S``."""
        if pod is None:
            return
        key, said = (event["pod"], event["reason"]), event.get("message", "")
        last = self._events_sent.get(key)
        if last and last[0] == said and (result.now - last[1]).total_seconds() < EVENT_REPEAT_S:
            return
        kind = "Warning" if event["reason"] in ("NotTriggerScaleUp", "NodeDriftOverdue") else "Normal"
        if self.config.dry_run:
            return  # events are listed in the plan; a dry run writes nothing
        if result.events_written >= self.config.max_events_per_loop:
            return  # a burst of thousands of pods must not hold the pass up: not marked sent, so next pass
        if self._may_act():
            result.events_written += 1
            queued = self._call(
                result,
                f"event on {event['pod']}",
                self.cluster.record_event,
                pod,
                event["reason"],
                said,
                kind,
            )
            if queued is not False:  # False: the writer's queue was full; tried again next pass
                self._events_sent[key] = (said, result.now)

    def _group_event(self, reason: str, message: str, kind: str = "Normal") -> None:
        """One Event per group decision on the status ConfigMap, when the cluster adapter has one (as
        cluster-autoscaler's LogEventRecorder writes ScaledUpGroup / FailedToScaleUpGroup,
        core/scaleup/orchestrator/executor.go); queued, never waited on."""
        record = getattr(self.cluster, "record_status_event", None)
        if record is None or self.config.dry_run:
            return
        try:
            record(reason, message, kind)
        except Exception as e:  # noqa: BLE001 - an Event never fails a decision
            log.warning("group event not queued", extra={"reason": reason, "error": str(e)})

    def _persist(self, plan: dict, snapshot: dict, result: LoopResult) -> None:
        was_persisted, self._persisted = self._persisted, False
        if self.config.dry_run or not self._may_act():
            return
        # the watermark advances only past what was read: with a region unread, the next pass reads again
        read_until = result.now if not result.aws_unread or self._since is None else self._since
        data = {
            STATE_GROUPS: json.dumps(plan.get("group_state") or {}, sort_keys=True),
            STATE_FAILURES_READ: show_time(read_until),
        }
        if self._removing:
            data[STATE_REMOVING] = json.dumps(self._removing, sort_keys=True)
        if self._shortfall:
            data[STATE_SHORTFALL] = json.dumps(
                {g: show_time(t) for g, t in self._shortfall.items()}, sort_keys=True
            )
        if was_persisted and self._state_unchanged(data, result.now):  # only the watermark moved, not far
            self._state_data = dict(data)
            self._persisted = True
        else:
            self._state_written = None
            self._call(result, "write state", self._write_state, data)
            if self._persisted:
                self._state_written = (dict(data), result.now)
        write_status = getattr(self.cluster, "write_status", None)
        if write_status is not None:
            status = self._status(plan, snapshot, result)
            if not self._status_unchanged(status, result.now):
                self._status_written = None
                errors = len(result.errors)
                self._call(result, "write status", write_status, status)
                if len(result.errors) == errors:
                    self._status_written = (status, result.now)

    def _state_unchanged(self, data: dict[str, str], now: datetime) -> bool:
        """The state ConfigMap needs no write: we wrote it last (and act still), everything but the failures watermark
        is as written, and that was less than STATE_WATERMARK_EVERY_S ago. A successor that reads the older
        watermark reads those activities again, and counts none twice (a group's failures are counted once, after
        its last: autoscaler.core.failures)."""
        if self._state_written is None:
            return False
        written, at = self._state_written
        same = {k: v for k, v in written.items() if k != STATE_FAILURES_READ} == {
            k: v for k, v in data.items() if k != STATE_FAILURES_READ
        }
        return same and (now - at).total_seconds() < STATE_WATERMARK_EVERY_S

    def _status_unchanged(self, status: dict[str, str], now: datetime) -> bool:
        """The status ConfigMap needs no write: as last written but for its summary's time, written less than
        STATUS_EVERY_S ago."""
        if self._status_written is None:
            return False
        written, at = self._status_written
        if (now - at).total_seconds() >= STATUS_EVERY_S or written.keys() != status.keys():
            return False
        for key, value in status.items():
            if key == "summary":
                old, new = json.loads(written[key]), json.loads(value)
                old.pop("time", None), new.pop("time", None)
                if old != new:
                    return False
            elif written[key] != value:
                return False
        return True

    def _write_state(self, data: dict[str, str]) -> None:
        self.cluster.write_state(data)
        self._state_data = dict(data)
        self._persisted = True  # the next pass trusts its memory over the ConfigMap

    def _record_removal(self) -> bool:
        """The state ConfigMap as last read or written, with the removals in progress now."""
        data = {**self._state_data, STATE_REMOVING: json.dumps(self._removing, sort_keys=True)}
        self._state_written = None  # the next pass writes its state whatever changed
        self.cluster.write_state(data)
        self._state_data = data
        return True

    def _status(self, plan: dict, snapshot: dict, result: LoopResult) -> dict[str, str]:
        """The status ConfigMap's data: a summary, and one JSON document per group (sizes, nodes, what this pass
        asked of it, and its failure and back-off state when it has one)."""
        out = {
            "summary": json.dumps(
                {
                    "time": show_time(result.now),
                    "pending_pods": result.pending_pods,
                    "scale_up": plan.get("scale_up") or {},
                    "unschedulable_pods": len(plan.get("unschedulable") or []),
                    "scale_down": len(plan.get("scale_down") or []),
                    "errors": len(result.errors),
                },
                sort_keys=True,
            )
        }
        registered: dict[str, int] = {}
        for n in snapshot["nodes"]:
            group = ((n.get("metadata") or {}).get("labels") or {}).get(NODE_GROUP_LABEL)
            if group:
                registered[group] = registered.get(group, 0) + 1
        states = plan.get("group_state") or {}
        for g in sorted(snapshot["groups"], key=lambda g: g["name"]):
            name = g["name"]
            doc = {
                "region": g["region"],
                "instance_type": g["instance_type"],
                "min": g["min"],
                "max": g["max"],
                "desired": (plan.get("desired") or {}).get(name, g["desired"]),
                "instances": len(g.get("instances") or []),
                "nodes": registered.get(name, 0),
                "scale_up": (plan.get("scale_up") or {}).get(name, 0),
                "health": "backed-off" if _backed_off(states.get(name), result.now) else "ok",
            }
            if name in states:
                doc["failure_state"] = states[name]
            out[f"group.{name}"] = json.dumps(doc, sort_keys=True)
        return out

    # -- observing ---------------------------------------------------------------------------------------------
    def _observe(self, plan: dict, snapshot: dict, result: LoopResult) -> None:
        pending = result.pending_pods
        metrics.PENDING_PODS.set(pending)
        metrics.UNSCHEDULABLE_PODS.set(len(plan.get("unschedulable") or []))
        regions = {g["name"]: g["region"] for g in snapshot["groups"]}
        if not self.config.dry_run:
            for group, n in (plan.get("scale_up") or {}).items():
                metrics.SCALE_UPS.labels(group, regions.get(group, "")).inc(n)
            for f in snapshot["scaling_failures"]:
                metrics.FAILED_SCALE_UPS.labels(f["group"], regions.get(f["group"], ""), f["reason"]).inc(
                    f.get("missing") or 1
                )
        metrics.NODES.clear()
        for (group, state), n in _node_state_counts(plan.get("node_states") or {}, snapshot).items():
            metrics.NODES.labels(group, state).set(n)
        metrics.DRIFTED_NODES.clear()
        for (group, overdue), n in _drift_counts(plan.get("drift") or {}).items():
            metrics.DRIFTED_NODES.labels(group, overdue).set(n)
        metrics.BACKOFF.clear()
        for group, state in (plan.get("group_state") or {}).items():
            metrics.BACKOFF.labels(group).set(1 if _backed_off(state, result.now) else 0)
        if self._notifier is not None and not self.config.dry_run:
            self._notifier.plan_done(plan, result)
        log.info(
            "pass",
            extra={
                "pending_pods": pending,
                "scale_up": plan.get("scale_up") or {},
                "unschedulable": len(plan.get("unschedulable") or []),
                "scale_down": len(plan.get("scale_down") or []),
                "errors": len(result.errors),
                "dry_run": self.config.dry_run,
                "phase_s": {k: round(v, 4) for k, v in result.phase_s.items()},
                # up to this line: the pass's own thread, and every thread of the process (the watches decoding
                # events, the Event writer) meanwhile
                "cpu_s": round(time.thread_time() - result.cpu_from, 4),
                "process_cpu_s": round(time.process_time() - result.process_cpu_from, 4),
            },
        )


def _pending_pod(p: dict) -> bool:
    return (
        isinstance(p, dict)
        and not (p.get("spec") or {}).get("nodeName")  # first: it rules out most pods of a busy cluster
        and (p.get("status") or {}).get("phase", "Pending") == "Pending"
    )


def _without_our_cordon(node: dict) -> dict:
    """The Node as the planner should see it: our own cordon (set with the to-be-deleted taint) is part of the
    removal, so a pending pod may still reuse the node (the untaint uncordons it)."""
    meta = node.get("metadata") if isinstance(node, dict) else None
    spec = node.get("spec") if isinstance(node, dict) else None
    if not isinstance(meta, dict) or not isinstance(spec, dict) or not spec.get("unschedulable"):
        return node
    if CORDONED_BY_AUTOSCALER_ANNOTATION not in (meta.get("annotations") or {}) or not _marked(node):
        return node
    return {**node, "spec": {**spec, "unschedulable": False}}


def _drift_counts(drift: dict[str, dict]) -> dict[tuple[str, str], int]:
    """(group, "true" | "false" past the drift deadline) -> drifted nodes (autoscaler/core/drift.py)."""
    out: dict[tuple[str, str], int] = {}
    for d in drift.values():
        key = (str(d.get("group") or ""), "true" if d.get("overdue") else "false")
        out[key] = out.get(key, 0) + 1
    return out


def _backed_off(state: dict | None, now: datetime) -> bool:
    until = _parse_iso((state or {}).get("backoff_until"))
    return bool(until and until > now)


def _node_state_counts(node_states: dict[str, str], snapshot: dict) -> dict[tuple[str, str], int]:
    """``{node or instance id: state}`` -> ``{(group, state): count}`` (group "" for nodes of no group)."""
    group_of = {i["id"]: g["name"] for g in snapshot["groups"] for i in g.get("instances") or []}
    for n in snapshot["nodes"]:
        meta = n.get("metadata") or {}
        group_of[meta.get("name")] = group_of.get(_instance_id(n) or "", "") or (
            meta.get("labels") or {}
        ).get(NODE_GROUP_LABEL, "")
    counts: dict[tuple[str, str], int] = {}
    for name, state in node_states.items():
        key = (group_of.get(name, ""), str(state))
        counts[key] = counts.get(key, 0) + 1
    return counts
