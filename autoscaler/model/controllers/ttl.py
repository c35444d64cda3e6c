"""The TTL-after-finished controller (pkg/controller/ttlafterfinished): a finished Job (Complete or Failed) with
``ttlSecondsAfterFinished`` is deleted that long after it finished, its pods with it (propagation Background)."""

from __future__ import annotations

import datetime as dt

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import delete


def _finished_at(job: dict) -> float | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            t = c.get("lastTransitionTime")
            return dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() if t else None
    return None


class TtlAfterFinished(Controller):
    kinds = ("jobs",)

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        if event_type != "DELETED" and (obj.get("spec") or {}).get("ttlSecondsAfterFinished") is not None:
            self.dirty.add((obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    def _wake(self, ns: str, name: str) -> None:
        self.dirty.add((ns, name))

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for ns, name in sorted(work):
            job = self.store.find("jobs", ns, name)
            if job is None or job["metadata"].get("deletionTimestamp"):
                continue
            done = _finished_at(job)
            if done is None:
                continue
            due = done + self.model.clock.scale(float(job["spec"]["ttlSecondsAfterFinished"]))
            if self.model.clock.now() >= due:
                delete(self.model, "jobs", job, "Background")
            else:
                self.model.queue.push(due, self._wake, ns, name)
