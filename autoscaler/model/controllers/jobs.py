"""The Job controller (pkg/controller/job/job_controller.go), with the behaviour a training job depends on:

- pods from the template, named ``<job>-<5 chars>`` (``<job>-<index>-<5 chars>`` for ``completionMode: Indexed``:
  the index in the ``batch.kubernetes.io/job-completion-index`` annotation and label, ``JOB_COMPLETION_INDEX``
  from the downward API, ``hostname`` ``<job>-<index>``), at most ``parallelism`` active, no more than the
  completions left (each missing index once, lowest first);
- every terminated pod counted once into ``succeeded`` / ``failed`` (``completedIndexes`` for Indexed Jobs);
- ``podFailurePolicy`` rules in order (pod_failure_policy.go ``matchPodFailurePolicy``): ``FailJob`` fails the Job
  (``Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0``), ``Ignore`` does not
  count towards ``backoffLimit``, ``Count`` does, ``FailIndex`` fails that index (``backoffLimitPerIndex``);
- more counted failures than ``backoffLimit``: ``BackoffLimitExceeded`` ("Job has reached the specified backoff
  limit"); past ``activeDeadlineSeconds``: ``DeadlineExceeded`` ("Job was active longer than specified deadline");
- a failing Job gets ``FailureTarget``, its running pods are deleted (the survivors of a failed gang go), no new
  pod is created, and once none is left it is ``Failed``; a successful one gets ``SuccessCriteriaMet``, then
  ``Complete`` with ``completionTime`` (its leftover pods deleted first);
- replacements for failed pods wait the pod failure back-off: 10 s, doubled for each failure since the last
  success, at most 6 minutes;
- ``suspend: true`` deletes the active pods (condition ``Suspended``); a pod the API refuses (quota, Pod Security,
  a missing ServiceAccount) is a ``FailedCreate`` event with the API's message, retried with back-off;
- events ``SuccessfulCreate``/``SuccessfulDelete`` "Created pod: x", ``Completed``, ``BackoffLimitExceeded``...
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from autoscaler.model.clock import iso
from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import (
    controller_of,
    create,
    delete,
    event,
    has_condition,
    is_active,
    is_deleting,
    is_ready,
    is_terminal,
    owner_ref,
    set_condition,
)

COMPONENT = "job-controller"
INDEX = "batch.kubernetes.io/job-completion-index"
BACKOFF_BASE_S = 10.0
BACKOFF_MAX_S = 360.0
CREATE_RETRY_MAX_S = 300.0


@dataclass
class JobState:
    counted: set[str] = field(default_factory=set)
    succeeded: set[int] = field(default_factory=set)
    failed_indexes: set[int] = field(default_factory=set)
    index_failures: dict[int, int] = field(default_factory=dict)
    counted_failures: int = 0  # towards backoffLimit (Ignore-d ones excluded)
    failures_since_success: int = 0
    last_failure: float = 0.0
    failure: tuple[str, str] | None = None  # (reason, message) once the Job is failing
    create_errors: int = 0
    timer: float | None = None


def _index(pod: dict) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def compress(indexes: set[int]) -> str:
    """``1,3-5,7``: the API's format of completedIndexes and failedIndexes."""
    out, run = [], []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def _terminated_exit(cs: dict) -> int | None:
    term = (cs.get("state") or {}).get("terminated")
    return None if term is None else int(term.get("exitCode", 0))


def match_failure_policy(policy: dict | None, pod: dict) -> tuple[str, str]:
    """(action, FailJob message) for a failed pod; action Count when no rule matches."""
    if not policy:
        return "Count", ""
    status = pod.get("status") or {}
    meta = pod["metadata"]
    for index, rule in enumerate(policy.get("rules") or ()):
        action = rule.get("action")
        codes = rule.get("onExitCodes")
        if codes is not None:
            for cs in [
                *(status.get("containerStatuses") or ()),
                *(status.get("initContainerStatuses") or ()),
            ]:
                code = _terminated_exit(cs)
                if code is None or code == 0:
                    continue
                if codes.get("containerName") not in (None, cs.get("name")):
                    continue
                values = codes.get("values") or []
                hit = code in values if codes.get("operator") == "In" else code not in values
                if hit:
                    msg = (f"Container {cs.get('name')} for pod {meta.get('namespace')}/{meta['name']} failed with exit "
                           f"code {code} matching {action} rule at index {index}")  # fmt: skip
                    return action, msg
        elif rule.get("onPodConditions") is not None:
            for cond in status.get("conditions") or ():
                for pattern in rule["onPodConditions"]:
                    if cond.get("type") == pattern.get("type") and cond.get("status") == pattern.get(
                        "status", "True"
                    ):
                        msg = (f"Pod {meta.get('namespace')}/{meta['name']} has condition {cond.get('type')} matching "
                               f"{action} rule at index {index}")  # fmt: skip
                        return action, msg
    return "Count", ""


class JobController(Controller):
    kinds = ("jobs", "pods")

    def __init__(self, model) -> None:
        super().__init__(model)
        self.state: dict[str, JobState] = {}

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        meta = obj["metadata"]
        if kind == "jobs":
            if event_type == "DELETED":
                self.state.pop(meta.get("uid", ""), None)
            else:
                self.dirty.add((meta.get("namespace", ""), meta["name"]))
            return
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == "Job":
            self.dirty.add((meta.get("namespace", ""), ref.get("name", "")))

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for ns, name in sorted(work):
            job = self.store.find("jobs", ns, name)
            if job is not None:
                self.sync_job(job)

    def _wake(self, ns: str, name: str, uid: str) -> None:
        job = self.store.find("jobs", ns, name)
        if job is not None and job["metadata"].get("uid") == uid:
            st = self.state.get(uid)
            if st is not None:
                st.timer = None
            self.dirty.add((ns, name))

    def _timer(self, job: dict, st: JobState, at: float) -> None:
        if st.timer is not None and st.timer <= at:
            return
        st.timer = at
        meta = job["metadata"]
        self.model.queue.push(at, self._wake, meta["namespace"], meta["name"], meta["uid"])

    # --- the sync --------------------------------------------------------------------------------------
    def sync_job(self, job: dict) -> None:
        meta, spec = job["metadata"], job.get("spec") or {}
        if is_deleting(job):
            return
        uid = meta["uid"]
        st = self.state.setdefault(uid, JobState())
        status = copy.deepcopy(job.get("status") or {})
        before = copy.deepcopy(status)
        now = self.model.clock.now()
        stamp = iso(now)
        pods = [
            p
            for p in self.store.list("pods", meta["namespace"])
            if (controller_of(p) or {}).get("uid") == uid
        ]
        finished = has_condition(status, "Complete") or has_condition(status, "Failed")
        if finished:
            for p in pods:
                if is_active(p):
                    self._delete_pod(job, p)
            return
        if spec.get("suspend"):
            for p in pods:
                if is_active(p):
                    self._delete_pod(job, p)
            set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended", stamp)
            self._write(job, status, before, pods)
            return
        if has_condition(status, "Suspended"):
            set_condition(status, "Suspended", "False", "JobResumed", "Job resumed", stamp)
            status.pop("startTime", None)
        status.setdefault("startTime", stamp)
        indexed = spec.get("completionMode") == "Indexed"
        policy = spec.get("podFailurePolicy")
        per_index = spec.get("backoffLimitPerIndex")
        for p in sorted(pods, key=lambda p: (p["status"].get("phase", ""), p["metadata"]["name"])):
            puid = p["metadata"]["uid"]
            if not is_terminal(p) or puid in st.counted:
                continue
            st.counted.add(puid)
            idx = _index(p) if indexed else None
            if p["status"].get("phase") == "Succeeded":
                status["succeeded"] = int(status.get("succeeded", 0)) + 1
                if idx is not None:
                    st.succeeded.add(idx)
                st.failures_since_success = 0
                continue
            status["failed"] = int(status.get("failed", 0)) + 1
            action, message = match_failure_policy(policy, p)
            st.last_failure = now
            if action == "Ignore":
                continue
            st.failures_since_success += 1
            if action == "FailJob" and st.failure is None:
                st.failure = ("PodFailurePolicy", message)
            elif action == "FailIndex" and idx is not None:
                st.failed_indexes.add(idx)
            else:
                st.counted_failures += 1
                if per_index is not None and idx is not None:
                    st.index_failures[idx] = st.index_failures.get(idx, 0) + 1
                    if st.index_failures[idx] > per_index:
                        st.failed_indexes.add(idx)
        completions = spec.get("completions")
        if indexed:
            status["completedIndexes"] = compress(st.succeeded)
            if per_index is not None:
                status["failedIndexes"] = compress(st.failed_indexes)
        if st.failure is None:
            if per_index is None and st.counted_failures > int(spec.get("backoffLimit", 6)):
                st.failure = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
            elif spec.get("activeDeadlineSeconds") is not None:
                deadline = _epoch(status["startTime"]) + self.model.clock.scale(
                    float(spec["activeDeadlineSeconds"])
                )
                if now >= deadline:
                    st.failure = ("DeadlineExceeded", "Job was active longer than specified deadline")
                else:
                    self._timer(job, st, deadline)
            if st.failure is None and per_index is not None and st.failed_indexes:
                max_failed = spec.get("maxFailedIndexes")
                if max_failed is not None and len(st.failed_indexes) > max_failed:
                    st.failure = (
                        "MaxFailedIndexesExceeded",
                        "Job has exceeded the specified maximal number of failed indexes",
                    )
                elif len(st.failed_indexes | st.succeeded) >= (completions or 0):
                    st.failure = ("FailedIndexes", "Job has failed indexes")
        active = [p for p in pods if is_active(p)]
        if st.failure is not None:
            reason, message = st.failure
            if set_condition(status, "FailureTarget", "True", reason, message, stamp):
                event(self.model, job, reason, message, "Warning", COMPONENT)
            for p in active:
                self._delete_pod(job, p)
            remaining = [p for p in pods if not is_terminal(p) and self._still_there(p)]
            if not remaining:
                set_condition(status, "Failed", "True", reason, message, stamp)
            self._write(job, status, before, pods)
            return
        if self._succeeded(spec, status, st, indexed, completions, active):
            set_condition(status, "SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of "
                          "succeeded pods", stamp)  # fmt: skip
            for p in active:
                self._delete_pod(job, p)
            if not [p for p in pods if not is_terminal(p) and self._still_there(p)]:
                set_condition(status, "Complete", "True", "CompletionsReached", "Reached expected number of succeeded "
                              "pods", stamp)  # fmt: skip
                status["completionTime"] = stamp
                event(self.model, job, "Completed", "Job completed", "Normal", COMPONENT)
            self._write(job, status, before, pods)
            return
        self._scale(job, spec, status, st, indexed, completions, active, now)
        self._write(job, status, before, [p for p in self.store.list("pods", meta["namespace"])
                                          if (controller_of(p) or {}).get("uid") == uid])  # fmt: skip

    def _still_there(self, pod: dict) -> bool:
        m = pod["metadata"]
        return self.store.find("pods", m["namespace"], m["name"]) is pod

    def _succeeded(self, spec, status, st, indexed, completions, active) -> bool:
        if indexed:
            return (
                completions is not None and len({i for i in st.succeeded if i < completions}) >= completions
            )
        if completions is None:
            return int(status.get("succeeded", 0)) > 0 and not active
        return int(status.get("succeeded", 0)) >= completions

    def _scale(self, job, spec, status, st: JobState, indexed, completions, active, now) -> None:
        parallelism = int(spec.get("parallelism", 1))
        if indexed:
            busy = {_index(p) for p in active}
            wanted = [i for i in range(completions or 0)
                      if i not in st.succeeded and i not in st.failed_indexes and i not in busy]  # fmt: skip
            room = max(0, parallelism - len(active))
            todo = wanted[:room]
            excess = len(active) - parallelism
        else:
            succeeded = int(status.get("succeeded", 0))
            want = parallelism if completions is None else min(parallelism, max(0, completions - succeeded))
            if completions is None and succeeded > 0:
                want = 0
            todo = list(range(max(0, want - len(active))))
            excess = len(active) - want
        if excess > 0:
            for p in sorted(active, key=lambda p: (is_ready(p), p["metadata"]["name"]))[:excess]:
                self._delete_pod(job, p)
        if not todo:
            return
        if st.failures_since_success > 0:
            delay = min(BACKOFF_BASE_S * 2 ** (st.failures_since_success - 1), BACKOFF_MAX_S)
            ready_at = st.last_failure + self.model.clock.scale(delay)
            if now < ready_at:
                self._timer(job, st, ready_at)
                return
        for i in todo:
            pod = self._pod(job, i if indexed else None)
            made, error = create(self.model, "pods", pod)
            if made is None:
                event(self.model, job, "FailedCreate", f"Error creating: {error}", "Warning", COMPONENT)
                st.create_errors += 1
                retry = min(2 ** min(st.create_errors, 16), CREATE_RETRY_MAX_S)
                self._timer(job, st, now + self.model.clock.scale(retry))
                return
            st.create_errors = 0
            event(
                self.model,
                job,
                "SuccessfulCreate",
                f"Created pod: {made['metadata']['name']}",
                "Normal",
                COMPONENT,
            )

    def _pod(self, job: dict, index: int | None) -> dict:
        meta, spec = job["metadata"], job.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        tmeta = template.get("metadata") or {}
        pspec = template.get("spec") or {}
        labels = dict(tmeta.get("labels") or {})
        annotations = dict(tmeta.get("annotations") or {})
        generate = f"{meta['name']}-"
        if index is not None:
            labels[INDEX] = str(index)
            annotations[INDEX] = str(index)
            pspec.setdefault("hostname", f"{meta['name']}-{index}")
            for c in [*(pspec.get("initContainers") or ()), *(pspec.get("containers") or ())]:
                env = c.setdefault("env", [])
                if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
                    env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "apiVersion": "v1", "fieldPath": f"metadata.annotations['{INDEX}']"}}})  # fmt: skip
            generate = f"{meta['name']}-{index}-"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": generate, "namespace": meta["namespace"], "labels": labels,
                         "annotations": annotations, "ownerReferences": [owner_ref(job, "batch/v1", "Job")]},
            "spec": pspec,
        }  # fmt: skip

    def _delete_pod(self, job: dict, pod: dict) -> None:
        if is_deleting(pod) or not self._still_there(pod):
            return
        delete(self.model, "pods", pod)
        event(
            self.model,
            job,
            "SuccessfulDelete",
            f"Deleted pod: {pod['metadata']['name']}",
            "Normal",
            COMPONENT,
        )

    def _write(self, job: dict, status: dict, before: dict, pods: list[dict]) -> None:
        live = [p for p in pods if self._still_there(p)]
        status["active"] = sum(1 for p in live if is_active(p))
        status["ready"] = sum(1 for p in live if is_active(p) and is_ready(p))
        status["terminating"] = sum(1 for p in live if is_deleting(p) and not is_terminal(p))
        status.setdefault("uncountedTerminatedPods", {})
        for k in ("succeeded", "failed"):
            status.setdefault(k, 0)
        if (
            status != before
            and self.store.find("jobs", job["metadata"]["namespace"], job["metadata"]["name"]) is job
        ):
            job["status"] = status
            self.store.modified("jobs", job)


def _epoch(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
