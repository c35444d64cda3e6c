"""The control loop's one pass: snapshot, plan, act, through the two interfaces (autoscaler.interfaces).

``Controller.run_once()`` never sleeps and never reads the system clock: time comes from the injected clock
(an object with ``now()`` or a callable; seconds since the epoch or an aware datetime), so the simulator runs it
on a virtual clock and the live process on the wall clock (:mod:`autoscaler.loop` schedules the passes).

Crash safety: everything a pass needs is in the cluster or re-derived from the cloud. The planner's per-group
failure state and the time failures were last read are persisted in the state ConfigMap after each pass; the
scale-down progress is on the nodes themselves (the to-be-deleted taint and annotations), so a restart between
taint and terminate resumes (or undoes) the removal rather than forgetting the node. A failed call is logged,
counted and skipped; the rest of the pass goes on.
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
from autoscaler.core.planner import plan as make_plan
from autoscaler.core.snapshot import parse_snapshot
from autoscaler.core.timeutil import parse_time, show_time
from autoscaler.interfaces import NODE_GROUP_LABEL, TO_BE_DELETED_TAINT, Cloud, Cluster

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


@dataclass
class LoopResult:
    """What one pass saw, decided and did (``plan`` is ``Plan.to_dict()``; None when planning failed)."""

    now: datetime
    plan: dict | None = None
    actions: list[dict] = field(default_factory=list)  # what was done (or, in dry-run, would be done)
    errors: list[str] = field(default_factory=list)
    pending_pods: int = 0
    events_written: int = 0

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
            snapshot, pods = self._snapshot(result)
            if snapshot is not None:
                result.plan = self._plan(snapshot, result)
            if result.plan is not None:
                result.pending_pods = _pending(snapshot["pods"])
                self._act(result.plan, pods, snapshot, result)
                self._observe(result.plan, snapshot, result)
        except Exception as e:  # noqa: BLE001 - one bad pass must not end the process; logged and counted
            result.errors.append(f"pass failed: {type(e).__name__}: {e}")
            log.exception("pass failed")
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
        snap, _ = self._snapshot(LoopResult(now=self.now()))
        return snap or {}

    def _snapshot(self, result: LoopResult) -> tuple[dict | None, dict[str, dict]]:
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
            return None, {}
        names = {g["name"] for g in groups}
        failures = self._call(result, "scaling failures", self.cloud.scaling_failures, since) or []
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
        return snapshot, {_key(p): p for p in pods}

    def _plan(self, snapshot: dict, result: LoopResult) -> dict | None:
        """The plan. Objects the snapshot parser rejects (a pod with a malformed quantity...) are logged,
        counted and left out, so one bad object does not stop the autoscaler; any other problem fails the pass."""
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
                snapshot.update(
                    {k: [o for i, o in enumerate(snapshot[k]) if i not in idx] for k, idx in bad.items()}
                )
        return None

    # -- acting ----------------------------------------------------------------------------------------------
    def execute(self, plan: dict, snapshot: dict) -> LoopResult:
        """Carry out ``plan`` (``Plan.to_dict()``) on the world ``snapshot`` describes: the acting half of a pass."""
        result = LoopResult(now=self.now(), plan=plan)
        self._act(plan, {_key(p): p for p in snapshot["pods"]}, snapshot, result)
        return result

    def _act(self, plan: dict, pods: dict[str, dict], snapshot: dict, result: LoopResult) -> None:
        groups = {g["name"]: g for g in snapshot["groups"]}
        nodes = {n["metadata"]["name"]: n for n in snapshot["nodes"]}
        for group, desired in sorted((plan.get("desired") or {}).items()):
            current = groups.get(group, {}).get("desired")
            if current == desired:
                continue
            self._do(result, {"action": "set_desired", "group": group, "from": current, "desired": desired},
                     self.cloud.set_desired, group, desired)  # fmt: skip
        steps = plan.get("scale_down") or []
        if any(s.get("action") == "terminate" for s in steps):
            by_node: dict[str, dict] = {}
            for key, pod in pods.items():
                where = (pod.get("spec") or {}).get("nodeName")
                if where:
                    by_node.setdefault(where, {})[key] = pod
        else:
            by_node = {}
        for step in steps:
            self._scale_down(step, nodes, by_node.get(step.get("node") or "", {}), groups, result)
        for node, wanted in sorted((plan.get("annotations") or {}).items()):
            self._do(result, {"action": "annotate", "node": node, "annotations": wanted},
                     self.cluster.annotate_node, node, wanted)  # fmt: skip
        self._forget_removed_nodes(nodes, groups, result)
        for event in plan.get("events") or []:
            self._event(event, pods, result)
        self._persist(plan, snapshot, result)

    def _do(self, result: LoopResult, action: dict, fn, *args) -> bool:
        """Record ``action`` and, unless dry-run (or no longer the leader), carry it out."""
        if self.config.dry_run:
            result.actions.append({**action, "dry_run": True})
            return True
        if not self._may_act():
            result.errors.append(f"{action['action']}: skipped, not the leader")
            return False
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - counted, logged, and the pass goes on
            result.actions.append({**action, "ok": False, "error": str(e)})
            result.errors.append(f"{action['action']} {action.get('group') or action.get('node')}: {e}")
            log.warning("action failed", extra={**action, "error": str(e)})
            return False
        result.actions.append({**action, "ok": True})
        log.info("action", extra=action)
        return True

    def _scale_down(self, step: dict, nodes: dict, pods: dict, groups: dict, result: LoopResult) -> None:
        """One scale-down step; ``pods`` are the pods bound to the step's node."""
        node, action = step.get("node"), step["action"]
        base = {"action": action, "node": node, "group": step.get("group"), "reason": step.get("reason", "")}
        if action == "taint":
            taint = {
                "key": TO_BE_DELETED_TAINT,
                "value": str(int(result.now.timestamp())),
                "effect": "NoSchedule",
            }
            if self._do(result, base, self.cluster.taint_node, node, taint):
                metrics.TAINTS.labels("taint").inc()
        elif action == "untaint":
            if self._do(result, base, self.cluster.untaint_node, node, TO_BE_DELETED_TAINT):
                metrics.TAINTS.labels("untaint").inc()
        elif action == "terminate":
            self._terminate(step, base, nodes.get(node), pods, result)
        else:
            result.errors.append(f"scale_down {node}: unknown action {action!r}")

    def _terminate(self, step: dict, base: dict, node: dict | None, pods: dict, result: LoopResult) -> None:
        """Terminate the instance with a decrement, then delete the Node.

        A draining node (ours: it carries the to-be-deleted taint) must hold no pod but DaemonSet and mirror
        pods: pods of ReplicaSets and the like are evicted first (a budget's 429 postpones the removal to a
        later pass), and a pod of a Job or a bare pod stops the removal: the plan should never have chosen the
        node, and a running job is never killed. A dead node or an instance that never registered (no taint,
        or no Node at all) is terminated as the plan says: its pods are gone already."""
        name, group = step.get("node"), step.get("group")
        instance = step.get("instance_id") or (_instance_id(node) if node else None)
        if not group or not instance:
            result.errors.append(f"terminate {name}: the plan names no group or instance; left alone")
            return
        if node is not None and _has_taint(node, TO_BE_DELETED_TAINT):
            blocking = self._clear_pods(name, pods, result)
            if blocking:
                result.errors.append(f"terminate {name}: pods still on it ({', '.join(blocking)}); later")
                return
        if self._do(
            result, {**base, "instance_id": instance}, self.cloud.terminate_instance, group, instance
        ):
            if not self.config.dry_run:
                metrics.TERMINATIONS.labels(group).inc()
            if node is not None:
                self._do(result, {"action": "delete_node", "node": name}, self.cluster.delete_node, name)

    def _clear_pods(self, name: str, pods: dict, result: LoopResult) -> list[str]:
        """Evict the evictable pods of a draining node; the pods that still hold it."""
        blocking = []
        for pod in pods.values():
            spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
            if spec.get("nodeName") != name or (pod.get("status") or {}).get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            owners = {r.get("kind") for r in meta.get("ownerReferences") or []}
            if "DaemonSet" in owners or "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
                continue
            if not owners or "Job" in owners:
                blocking.append(_key(pod))
                continue
            if not self._do(result, {"action": "evict", "pod": _key(pod), "node": name},
                            self._evict, meta.get("namespace", ""), meta["name"]):  # fmt: skip
                blocking.append(_key(pod))  # refused (429) or failed: retried in a later pass
        return sorted(blocking)

    def _evict(self, namespace: str, name: str) -> None:
        if not self.cluster.evict_pod(namespace, name):
            metrics.EVICTIONS.labels("refused").inc()
            raise _Refused(f"eviction of {namespace}/{name} refused by a disruption budget; retried later")
        metrics.EVICTIONS.labels("evicted").inc()

    def _forget_removed_nodes(self, nodes: dict, groups: dict, result: LoopResult) -> None:
        """Delete Nodes we tainted whose instance has left its (listed) group: a pass that ended between
        terminate and delete."""
        listed = {i["id"] for g in groups.values() for i in g.get("instances") or []}
        by_name = {g["name"] for g in groups.values()}
        for name, node in sorted(nodes.items()):
            group = ((node.get("metadata") or {}).get("labels") or {}).get(NODE_GROUP_LABEL)
            instance = _instance_id(node)
            if (
                group in by_name
                and instance
                and instance not in listed
                and _has_taint(node, TO_BE_DELETED_TAINT)
            ):
                self._do(result, {"action": "delete_node", "node": name, "reason": "instance already terminated"},
                         self.cluster.delete_node, name)  # fmt: skip

    def _event(self, event: dict, pods: dict, result: LoopResult) -> None:
        pod = pods.get(event.get("pod", ""))
        if pod is None:
            return
        key, said = (event["pod"], event["reason"]), event.get("message", "")
        last = self._events_sent.get(key)
        if last and last[0] == said and (result.now - last[1]).total_seconds() < EVENT_REPEAT_S:
            return
        kind = "Warning" if event["reason"] == "NotTriggerScaleUp" else "Normal"
        if self.config.dry_run:
            return  # events are listed in the plan; a dry run writes nothing
        if result.events_written >= self.config.max_events_per_loop:
            return  # a burst of thousands of pods must not hold the pass up: not marked sent, so next pass
        if self._may_act():
            result.events_written += 1
            self._call(
                result,
                f"event on {event['pod']}",
                self.cluster.record_event,
                pod,
                event["reason"],
                said,
                kind,
            )
            self._events_sent[key] = (said, result.now)
        if len(self._events_sent) > 4 * max(1, len(pods)):  # forget pods that are gone
            self._events_sent = {k: v for k, v in self._events_sent.items() if k[0] in pods}

    def _persist(self, plan: dict, snapshot: dict, result: LoopResult) -> None:
        if self.config.dry_run or not self._may_act():
            return
        data = {
            STATE_GROUPS: json.dumps(plan.get("group_state") or {}, sort_keys=True),
            STATE_FAILURES_READ: show_time(result.now),
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


def _backed_off(state: dict | None, now: datetime) -> bool:
    until = _parse_iso((state or {}).get("backoff_until"))
    return bool(until and until > now)


class _Refused(Exception):
    pass


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
