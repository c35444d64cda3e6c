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

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from autoscaler import metrics
from autoscaler.core.config import PlannerConfig
from autoscaler.core.errors import SnapshotError
from autoscaler.core.failures import GONE_STATES
from autoscaler.core.names import TO_BE_DELETED_SINCE_ANNOTATION
from autoscaler.core.planner import plan as make_plan
from autoscaler.core.snapshot import parse_snapshot
from autoscaler.core.timeutil import parse_time, show_time
from autoscaler.interfaces import Cloud, Cluster
from clusterspec.names import (
    DRIFTED_TAINT,
    NODE_GROUP_LABEL,
    SCALE_DOWN_DISABLED_ANNOTATION,
    TO_BE_DELETED_TAINT,
    TO_BE_DELETED_TAINTS,
)

log = logging.getLogger("autoscaler.controller")

STATE_GROUPS = "group_state"  # keys of the persisted state (the state ConfigMap's data)
STATE_FAILURES_READ = "failures_read_until"
EVENT_REPEAT_S = 600.0  # the same event on the same pod at most this often
_BAD_OBJECT = re.compile(r"^(?:snapshot\.)?(pods|nodes|groups)\[(\d+)\]")


@dataclass
class ControllerConfig:
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    regions: list[str] = field(default_factory=list)  # spill-over order; groups' other regions go last
    dry_run: bool = False
    failure_lookback_s: float = 900.0  # without persisted state: how far back to read failed activities
    max_events_per_loop: int = 500  # pod Events written per pass; the rest go out in the next passes
    max_cache_age_s: float = 120.0  # no scale-down starts while a watch cache is older than this


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
                result.plan = self._plan(snapshot, result)
            if result.plan is not None:
                result.pending_pods = _pending(snapshot["pods"])
                self._act(result.plan, snapshot, result)
                self._observe(result.plan, snapshot, result)
        except Exception as e:  # noqa: BLE001 - one bad pass must not end the process; logged and counted
            result.errors.append(f"pass failed: {type(e).__name__}: {e}")
            log.exception("pass failed")
        metrics.AWS_UNREAD.set(len(result.aws_unread))
        metrics.LOOPS.labels("ok" if result.ok and not result.errors else "error").inc()
        self.last = result
        return result

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
        state = self._call(result, "read state", self.cluster.read_state) or {}
        try:
            group_state = json.loads(state.get(STATE_GROUPS) or "{}")
        except ValueError:
            result.errors.append("state ConfigMap: group_state is not JSON; starting without failure state")
            group_state = {}
        since = _parse_iso(state.get(STATE_FAILURES_READ)) or now - timedelta(
            seconds=self.config.failure_lookback_s
        )
        pods = self._call(result, "list pods", self.cluster.list_pods)
        nodes = self._call(result, "list nodes", self.cluster.list_nodes)
        pdbs = self._call(result, "list pdbs", self.cluster.list_pdbs) or []
        groups = self._call(result, "list groups", self.cloud.list_groups)
        if pods is None or nodes is None or groups is None:
            return None
        names = {g["name"] for g in groups}
        self._since = since
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
        nodes = self._without_departed(nodes, groups)
        regions = list(self.config.regions)
        for g in groups:
            if g["region"] not in regions:
                regions.append(g["region"])
        snapshot = {
            "now": show_time(now),
            "regions": regions,
            "pods": pods,
            "nodes": nodes,
            "pdbs": pdbs,
            "groups": groups,
            "scaling_failures": [f for f in failures if f["group"] in names],
            "group_state": {k: v for k, v in group_state.items() if k in names},
        }
        return snapshot

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

    def _plan(self, snapshot: dict, result: LoopResult) -> dict | None:
        """The plan. Objects the snapshot parser rejects (a pod with a malformed quantity...) are logged,
        counted and left out, so one bad object does not stop the autoscaler; a rejected Node is replaced by a
        stand-in (``_stand_in``) so its instance does not look unregistered. Any other problem fails the pass."""
        self._unparsed, self._unparsed_unnamed = {}, False
        for attempt in range(2):
            try:
                return make_plan(parse_snapshot(snapshot), self.config.planner).to_dict()
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

    # -- acting ----------------------------------------------------------------------------------------------
    def execute(self, plan: dict, snapshot: dict) -> LoopResult:
        """Carry out ``plan`` (``Plan.to_dict()``) on the world ``snapshot`` describes: the acting half of a pass."""
        result = LoopResult(now=self.now(), plan=plan)
        self._act(plan, snapshot, result)
        return result

    def _act(self, plan: dict, snapshot: dict, result: LoopResult) -> None:
        groups = {g["name"]: g for g in snapshot["groups"]}
        nodes = {n["metadata"]["name"]: n for n in snapshot["nodes"]}
        unprotected = getattr(self.cloud, "unprotected_groups", None)
        for group in unprotected() if unprotected is not None else []:
            if group in groups:  # adopt it: no lowering of its desired capacity may pick one of its instances
                self._do(result, {"action": "protect", "group": group}, self.cloud.protect, group)
        for group, desired in sorted((plan.get("desired") or {}).items()):
            self._set_desired(group, desired, groups.get(group, {}), result)
        hold = self._scale_down_hold(result)
        self._fresh_nodes = None
        for step in plan.get("scale_down") or []:
            if hold and step.get("action") in ("taint", "terminate"):
                result.errors.append(
                    f"{step['action']} {step.get('node') or step.get('instance_id')}: held, {hold}"
                )
                continue
            self._scale_down(step, nodes, groups, result)
        for node, wanted in sorted((plan.get("annotations") or {}).items()):
            self._do(result, {"action": "annotate", "node": node, "annotations": wanted},
                     self.cluster.annotate_node, node, wanted)  # fmt: skip
        self._forget_removed_nodes({**self._departed, **nodes}, groups, result)
        events = plan.get("events") or []
        # the pods the plan's Events name, not a map of every pod (tens of thousands of keys each pass)
        named = {e.get("pod") for e in events}
        pods = {k: p for p in snapshot["pods"] if (k := _key(p)) in named} if named else {}
        for event in events:
            self._event(event, pods.get(event.get("pod", "")), result)
        if len(self._events_sent) > 4 * max(1, len(snapshot["pods"])):  # forget pods that are gone
            live = {_key(p) for p in snapshot["pods"]}
            self._events_sent = {k: v for k, v in self._events_sent.items() if k[0] in live}
        self._persist(plan, snapshot, result)

    def _set_desired(self, group: str, desired: int, g: dict, result: LoopResult) -> None:
        """Set a group's desired capacity, never below its live instances: lowering it further would let AWS
        choose which instances to terminate (instances leave only by TerminateInstanceInAutoScalingGroup). A
        refusal (ValidationError, a deleted launch template...) becomes a failure of that group in the next plan,
        which backs it off and spills its pods over; the other groups go on."""
        current = g.get("desired")
        live = sum(
            1 for i in g.get("instances") or [] if str(i.get("state", "InService")).lower() not in GONE_STATES
        )
        if current is not None and desired < current and desired < live:
            result.errors.append(
                f"set_desired {group}: the plan lowers it to {desired}, below its {live} live instance(s); kept at"
                f" {live} (instances are removed one by one)"
            )
            desired = live
        if current == desired:
            return
        action = {"action": "set_desired", "group": group, "from": current, "desired": desired}
        done = self._do(result, action, self.cloud.set_desired, group, desired)
        up = current is not None and desired > current
        if done and up:
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
            taint = {
                "key": TO_BE_DELETED_TAINT,
                "value": str(int(result.now.timestamp())),
                "effect": "NoSchedule",
            }
            if self._do(result, base, self.cluster.taint_node, node, taint):
                metrics.TAINTS.labels("taint").inc()
        elif action == "untaint":
            for key in _untaint_keys(nodes.get(node)):
                if self._do(result, base, self.cluster.untaint_node, node, key):
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

    def _terminate(self, step: dict, base: dict, node: dict | None, result: LoopResult) -> None:
        """Terminate the instance with a decrement, then delete the Node, once a fresh read proves it empty."""
        name, group = step.get("node"), step.get("group")
        instance = step.get("instance_id") or (_instance_id(node) if node else None)
        what = name or instance
        if not group or not instance:
            result.errors.append(f"terminate {what}: the plan names no group or instance; left alone")
            return
        if name in self._unparsed or instance in self._unparsed.values():
            result.errors.append(f"terminate {what}: its Node was rejected by the parser; left alone")
            return
        if not self.config.dry_run:
            problem = self._fresh_check(name, instance, node, result)
            if problem:
                result.errors.append(f"terminate {what}: {problem}; left alone")
                log.warning(
                    "termination aborted", extra={"node": name, "instance": instance, "error": problem}
                )
                metrics.ABORTED_TERMINATIONS.labels(group).inc()
                return
        if self._do(
            result, {**base, "instance_id": instance}, self.cloud.terminate_instance, group, instance
        ):
            if not self.config.dry_run:
                metrics.TERMINATIONS.labels(group).inc()
            if node is not None:
                self._do(result, {"action": "delete_node", "node": name}, self.cluster.delete_node, name)

    # -- fresh reads before terminating -------------------------------------------------------------------------
    def _read(self, method: str, fallback, *args):
        """A read from the API itself (the cluster's ``read_*``), never a cache; adapters that have no cache
        (the cluster model) offer only ``list_*``, which is the truth there."""
        fn = getattr(self.cluster, method, None)
        return fn(*args) if fn is not None else fallback(*args)

    def _fresh_check(
        self, name: str | None, instance: str, node: dict | None, result: LoopResult
    ) -> str | None:
        """Why the instance must not be terminated now, by a fresh read; None when it may be."""
        try:
            if node is None:  # an instance with no Node in the cache: no Node may name it
                if self._unparsed_unnamed:
                    return "a Node the parser rejected has no readable name; it may be this instance's"
                if self._fresh_nodes is None:
                    self._fresh_nodes = self._read("read_nodes", lambda: self.cluster.list_nodes())
                for n in self._fresh_nodes:
                    if isinstance(n, dict) and _instance_id(n) == instance:
                        return f"a fresh read finds its Node {n['metadata'].get('name')}"
                return None
            fresh = self._read(
                "read_node",
                lambda n: next((x for x in self.cluster.list_nodes() if x["metadata"]["name"] == n), None),
                name,
            )
            if fresh is None:
                return "its Node is gone by a fresh read; planned again next pass"
            dead = not _ready(node)  # planned as dead: still NotReady?
            if dead and _ready(fresh):
                return "Ready again by a fresh read"
            if not dead and not _marked(fresh):
                return "no longer carries the to-be-deleted taint by a fresh read"
            pods = self._read(
                "read_pods_on_node",
                lambda n: [p for p in self.cluster.list_pods() if (p.get("spec") or {}).get("nodeName") == n],
                name,
            )
        except Exception as e:  # noqa: BLE001 - what cannot be read is not proven empty
            return f"the API could not be read to prove it empty ({e})"
        # A dead node's pods that the control plane is already deleting (the taint manager evicted them after
        # their toleration; a Job has replaced them) do not hold it; any other pod may still run behind a network
        # partition, so it does: a running job is never killed, on this path either.
        holding = sorted(
            _key(p)
            for p in pods
            if _holds_node(p) and not (dead and (p.get("metadata") or {}).get("deletionTimestamp"))
        )
        if not holding:
            return None
        if dead:
            return f"a fresh read finds pods on it ({', '.join(holding[:5])}); it may still run them"
        untainted = [
            self._do(result, {"action": "untaint", "node": name, "reason": "pods on it by a fresh read"},
                     self.cluster.untaint_node, name, key)
            for key in _untaint_keys(fresh)
        ]  # fmt: skip
        if all(untainted):
            metrics.TAINTS.labels("untaint").inc()
            self._do(result, {"action": "annotate", "node": name, "annotations": {TO_BE_DELETED_SINCE_ANNOTATION: None}},
                     self.cluster.annotate_node, name, {TO_BE_DELETED_SINCE_ANNOTATION: None})  # fmt: skip
        return f"a fresh read finds pods on it ({', '.join(holding[:5])}); untainted"

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
        if self.config.dry_run or not self._may_act():
            return
        # the watermark advances only past what was read: with a region unread, the next pass reads again
        read_until = result.now if not result.aws_unread or self._since is None else self._since
        data = {
            STATE_GROUPS: json.dumps(plan.get("group_state") or {}, sort_keys=True),
            STATE_FAILURES_READ: show_time(read_until),
        }
        self._call(result, "write state", self.cluster.write_state, data)
        write_status = getattr(self.cluster, "write_status", None)
        if write_status is not None:
            self._call(result, "write status", write_status, self._status(plan, snapshot, result))

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
            },
        )


def _pending(pods: list[dict]) -> int:
    return sum(
        1
        for p in pods
        if (p.get("status") or {}).get("phase", "Pending") == "Pending"
        and not (p.get("spec") or {}).get("nodeName")
    )


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
