"""Distributed jobs without gang scheduling: the work starts when the last worker runs.

Under a scheduler without Coscheduling (``--scheduler default``) the pods of a multi-node job bind one by one as
room appears. The first ones hold their GPUs while they wait at the rendezvous (torch.distributed's
``init_process_group`` blocks until every rank has joined), so the job's run time counts from the moment its last
pod runs, and all its pods end together. Those pods carry ``RENDEZVOUS_ANNOTATION`` (their run time) instead of
the model's duration annotation; this watcher ends them, as Succeeded, ``duration`` after the last one started.
A worker killed before (its node removed, an eviction) takes the running ones with it (the model kills a gang's
running members together) and the Job controller's replacements start a new rendezvous.
"""

from __future__ import annotations

from simulator.model import pods as P
from simulator.model.cluster_model import ClusterModel
from simulator.workload import RENDEZVOUS_ANNOTATION


class Rendezvous:
    def __init__(self, model: ClusterModel, sizes: dict[str, int]) -> None:
        self.model = model
        self.sizes = sizes  # job id -> pods of the job
        self.running: dict[str, dict[str, dict]] = {}  # job id -> uid -> running pod
        self.started: set[frozenset[str]] = set()

    def __call__(self, kind: str, event: str, pod: dict) -> None:
        if kind != "pods":
            return
        notes = pod["metadata"].get("annotations") or {}
        if RENDEZVOUS_ANNOTATION not in notes:
            return
        job = (pod["metadata"].get("labels") or {}).get(P.JOB_NAME_LABEL)
        uid = pod["metadata"]["uid"]
        members = self.running.setdefault(job, {})
        if event != "DELETED" and (pod.get("status") or {}).get("phase") == "Running":
            members[uid] = pod
        else:
            members.pop(uid, None)
            return
        if len(members) < self.sizes.get(job, 1):
            return
        key = frozenset(members)
        if key in self.started:
            return
        self.started.add(key)
        seconds = float(notes[RENDEZVOUS_ANNOTATION])
        self.model.queue.push(
            self.model.now() + self.model.clock.scale(seconds), self._finish, list(members.values())
        )

    def _finish(self, pods: list[dict]) -> None:
        for pod in pods:
            if (pod.get("status") or {}).get("phase") == "Running":
                # the container exits 0: the model's own completion path (it keeps no timer for these pods)
                self.model._finish(pod, "Succeeded", "Completed", "")
