"""Why a job is where it is, from what the cluster already says (``lab status``): the Job's conditions, its pods'
statuses, and the Events on them, as ``kubectl describe`` would show them, in one line per job.

| state | from |
|---|---|
| ``Failed`` | the Job's ``Failed`` condition; the reason is the failed pod's own: the ``main`` container's exit code and reason (``Error``, ``OOMKilled``) with its termination message's last line, or the init step (``code``, ``deps``) that failed before the command ran; else the condition's reason (``BackoffLimitExceeded``) |
| ``Succeeded`` | the ``Complete`` condition |
| ``WaitingForQuota`` | no pod, and the Job controller's ``FailedCreate`` Event says ``exceeded quota`` (its message has the numbers: requested, used, limited) |
| ``WaitingForNodes`` | a pod with no node, and the autoscaler's Event on it (``TriggeredScaleUp``: which group grows; ``NotTriggerScaleUp``: why none can) |
| ``Scheduling`` | a pod with no node and no word from the autoscaler yet: the scheduler's ``PodScheduled`` message |
| ``Starting`` | pods on nodes whose init steps or containers are still starting |
| ``Running`` | the command runs |

Pure: dicts in (the API's JSON), a row out.
"""

from __future__ import annotations

from datetime import UTC, datetime

from labctl.jobs import GPU, GPU_TYPE_ANNOTATION, REGION_PREF_ANNOTATION

AUTOSCALER_REASONS = ("TriggeredScaleUp", "NotTriggerScaleUp")


def age(created: str | None, now: datetime | None = None) -> str:
    """kubectl's short age: 45s, 12m, 3h, 6d."""
    if not created:
        return "-"
    now = now or datetime.now(UTC)
    s = max(0, int((now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def _first_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _condition(obj: dict, kind: str) -> dict | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind and c.get("status") == "True":
            return c
    return None


def _terminated(cs: dict) -> dict | None:
    return (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")


def pod_failure(pod: dict) -> str | None:
    """One line: why this pod failed, or None."""
    name = pod["metadata"]["name"]
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or ():
        term = _terminated(cs)
        if term and term.get("exitCode"):
            step = "installing its requirements" if cs["name"] == "deps" else "fetching its code"
            last = _first_line(term.get("message"))
            return (f"its {cs['name']} step ({step}) failed with exit code {term['exitCode']} "
                    f"({term.get('reason') or 'Error'}) on {name}" + (f": {last}" if last else ""))  # fmt: skip
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        term = _terminated(cs)
        if cs.get("name") == "main" and term and term.get("exitCode"):
            last = _first_line(term.get("message"))
            return f"exit code {term['exitCode']} ({term.get('reason') or 'Error'}) on {name}" + (
                f": {last}" if last else ""
            )
    if (pod.get("status") or {}).get("phase") == "Failed":
        st = pod["status"]
        return f"{st.get('reason') or 'Failed'} on {name}" + (
            f": {st['message']}" if st.get("message") else ""
        )
    return None


def _starting(pod: dict) -> str | None:
    st = pod.get("status") or {}
    for cs in st.get("initContainerStatuses") or ():
        term = (cs.get("state") or {}).get("terminated")
        if term and term.get("exitCode") == 0:
            continue
        return f"its {cs['name']} step is {'running' if 'running' in (cs.get('state') or {}) else 'waiting'}"
    for cs in st.get("containerStatuses") or ():
        waiting = (cs.get("state") or {}).get("waiting")
        if cs.get("name") == "main" and waiting:
            return f"its command is waiting ({waiting.get('reason') or 'ContainerCreating'})"
    if st.get("phase") == "Pending":
        return "starting"
    return None


def _latest(events: list[dict], names: set[str], reasons: tuple[str, ...] | None = None) -> dict | None:
    chosen = [e for e in events if (e.get("involvedObject") or {}).get("name") in names
              and (reasons is None or e.get("reason") in reasons)]  # fmt: skip
    key = lambda e: e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp") or ""  # noqa: E731
    return max(chosen, key=key) if chosen else None


def explain(job: dict, pods: list[dict], events: list[dict]) -> tuple[str, str]:
    """(state, reason) of one job."""
    name = job["metadata"]["name"]
    failed = _condition(job, "Failed")
    if failed:
        for pod in pods:
            why = pod_failure(pod)
            if why:
                return "Failed", why
        return "Failed", f"{failed.get('reason') or 'Failed'}: {failed.get('message') or ''}".rstrip(": ")
    if _condition(job, "Complete"):
        return "Succeeded", ""
    if (job.get("spec") or {}).get("suspend"):
        return "Suspended", "created suspended; resumed once its Service and PodGroup exist"
    if not pods:
        create = _latest(events, {name}, ("FailedCreate",))
        if create and "exceeded quota" in (create.get("message") or ""):
            return "WaitingForQuota", create["message"]
        if create:
            return "Pending", create.get("message") or ""
        return "Pending", "no pod created yet"
    unplaced = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
    if unplaced:
        said = _latest(events, {p["metadata"]["name"] for p in unplaced}, AUTOSCALER_REASONS)
        if said:
            return "WaitingForNodes", f"{said['reason']}: {said.get('message') or ''}".rstrip(": ")
        for pod in unplaced:
            for c in (pod.get("status") or {}).get("conditions") or ():
                if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("message"):
                    return "Scheduling", c["message"]
        return "Scheduling", f"{len(unplaced)} of {len(pods)} pods not on a node yet"
    for pod in pods:
        why = _starting(pod)
        if why:
            return "Starting", f"{pod['metadata']['name']}: {why}"
    return "Running", ""


def row(
    job: dict, pods: list[dict], events: list[dict], regions: dict[str, str], now: datetime | None = None
) -> dict:
    """One job's line of `lab status` (and its object in `-o json`)."""
    state, reason = explain(job, pods, events)
    spec = job.get("spec") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    limits = ((template.get("containers") or [{}])[0].get("resources") or {}).get("limits") or {}
    notes = job["metadata"].get("annotations") or {}
    placed = sorted(
        {regions.get(p["spec"]["nodeName"], "?") for p in pods if (p.get("spec") or {}).get("nodeName")}
    )
    st = job.get("status") or {}
    return {
        "job": job["metadata"]["name"],
        "state": state,
        "reason": reason,
        "age": age(job["metadata"].get("creationTimestamp"), now),
        "nodes": spec.get("completions") or 1,
        "gpus_per_node": int(limits.get(GPU, 0)),
        "gpu_type": notes.get(GPU_TYPE_ANNOTATION) or "any",
        "region": ",".join(placed) or notes.get(REGION_PREF_ANNOTATION) or "any",
        "active": st.get("active") or 0,
        "succeeded": st.get("succeeded") or 0,
        "failed": st.get("failed") or 0,
        "pods": [
            {
                "name": p["metadata"]["name"],
                "phase": (p.get("status") or {}).get("phase"),
                "node": (p.get("spec") or {}).get("nodeName"),
            }
            for p in pods
        ],  # fmt: skip
    }
