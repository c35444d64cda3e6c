"""Where each job's wait went: submission to the start of the attempt that completed, cut at the moments of the
node its last pod landed on (docs/simulator.md, "Where the wait goes").

For the pod that started last (a job starts when all its pods run), the wait from submission ``s`` to its start
is cut at, in order (each moment clamped to the interval and to the one before it):

- ``decision``: ``s`` -> the policy's first loop at or after ``s`` (only when its node was bought after ``s``;
  a loop that does not buy for the pod, as cluster-autoscaler's wait for new GPU pods, shows in ``purchase``);
- ``purchase``: that loop -> the launch of the node the pod landed on;
- ``boot``: -> the node registered (the kubelet's first status);
- ``ready``: -> the node usable: Ready, its not-ready and uninitialized taints gone, its GPUs advertised;
- ``bind``: -> the pod bound to it (the scheduler, a gang completing, room freed by other pods);
- ``pull``: -> the pod running (image pulls, where the model does them).

and the job is put in one of three causes by its node: ``bought`` (launched after the submission: bought for it
or for pods submitted with it), ``launching`` (already launched, for other pods or a warm pool, and not yet
usable at the submission), ``running`` (usable at the submission: the job waited for room or for its gang).
A job that never completed is ``unfinished``: it waits until the end of the run.
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass

from clusterspec.catalog import instance_types
from simulator.model import objects as O
from simulator.model import pods as P
from simulator.model.quantity import parse_quantity

GPU = "nvidia.com/gpu"
PARTS = ("decision", "purchase", "boot", "ready", "bind", "pull")
CAUSES = ("bought", "launching", "running", "unfinished")
CAUSE_WORDS = {
    "bought": "a node bought after submission",
    "launching": "a node already launching",
    "running": "room on a running node",
    "unfinished": "never ran to completion",
}
_NOT_USABLE = frozenset({"node.kubernetes.io/not-ready", "node.cloudprovider.kubernetes.io/uninitialized"})


class NodeTimes:
    """Subscribed to the model: when each pod was bound and each node became usable (model time)."""

    def __init__(self, now) -> None:
        self._now = now
        self.bound: dict[str, tuple[float, str]] = {}  # pod uid -> (when bound, node)
        self.usable: dict[str, float] = {}  # node -> first time it could run a GPU pod
        self.instance: dict[str, str] = {}  # node -> its instance id (from spec.providerID)

    def __call__(self, kind: str, event: str, obj: dict) -> None:
        if event == "DELETED":
            return
        if kind == "pods":
            node = (obj.get("spec") or {}).get("nodeName")
            if node and not P.is_daemonset(obj):
                uid = obj["metadata"]["uid"]
                if uid not in self.bound or self.bound[uid][1] != node:
                    self.bound[uid] = (self._now(), node)
        elif kind == "nodes":
            name = obj["metadata"]["name"]
            if name not in self.instance:
                self.instance[name] = ((obj.get("spec") or {}).get("providerID") or "").rsplit("/", 1)[-1]
            if name not in self.usable and _usable(obj):
                self.usable[name] = self._now()


def _usable(node: dict) -> bool:
    if not O.is_ready(node):
        return False
    if any(t.get("key") in _NOT_USABLE for t in (node.get("spec") or {}).get("taints") or ()):
        return False
    itype = instance_types().get(
        (node["metadata"].get("labels") or {}).get("node.kubernetes.io/instance-type", "")
    )
    if itype is not None and itype.gpus:  # a GPU node runs GPU pods once its device plugin advertises them
        return parse_quantity(((node.get("status") or {}).get("allocatable") or {}).get(GPU, 0)) > 0
    return True


@dataclass(frozen=True)
class JobWait:
    job: str
    gpus: int
    wait_s: float
    cause: str
    instance_type: str | None
    decision: float = 0.0
    purchase: float = 0.0
    boot: float = 0.0
    ready: float = 0.0
    bind: float = 0.0
    pull: float = 0.0


def job_waits(run, times: NodeTimes, t0: float) -> list[JobWait]:
    """One :class:`JobWait` per job of ``run`` (a finished ``runner.Run``), model times relative to ``t0``."""
    loops = [lp.t for lp in run.record.loops]
    by_id = {i.id: i for i in run.model.cloud.history}
    done: dict[str, list] = {}
    for uid, rec in run.model.records.items():
        if rec.outcome == "Succeeded" and rec.started is not None:
            done.setdefault(rec.job[2], []).append((rec.started, uid, rec))
    end = run.record.end_s
    out = []
    for job in run.scenario.jobs:
        s = job.submit_s
        recs = done.get(job.id, [])
        if len(recs) < run.pods_per_job.get(job.id, 1):
            out.append(JobWait(job.id, job.gpus, max(0.0, end - s), "unfinished", None))
            continue
        started, uid, rec = max(recs, key=lambda r: r[0])
        start = started - t0
        bound_at, node = times.bound.get(uid, (started, rec.node))
        inst = by_id.get(times.instance.get(node, ""))
        launched = inst.launched_at - t0 if inst else -1.0
        registered = (inst.registered_at - t0) if inst and inst.registered_at is not None else launched
        usable = times.usable.get(node, t0) - t0 if node in times.usable else registered
        if inst is not None and inst.settled:
            launched = registered = usable = min(usable, 0.0)
        cuts = [s]
        if launched > s:
            cause = "bought"
            i = bisect.bisect_left(loops, s - 1e-9)
            cuts.append(min(start, loops[i] if i < len(loops) else launched))
        else:
            cause = "launching" if usable > s else "running"
            cuts.append(s)
        for t in (launched, registered, usable, bound_at - t0, start):
            cuts.append(min(start, max(cuts[-1], t)))
        parts = {name: round(b - a, 3) for name, a, b in zip(PARTS, cuts[:-1], cuts[1:], strict=True)}
        itype = inst.instance_type if inst else None
        out.append(JobWait(job.id, job.gpus, round(start - s, 3), cause, itype, **parts))
    return out


def _size(gpus: int) -> str:
    return "1 GPU" if gpus == 1 else "2-7 GPUs" if gpus < 8 else "8 GPUs" if gpus == 8 else "over 8 GPUs"


def tail(waits: list[JobWait], threshold: float) -> dict:
    """The jobs that waited at least ``threshold`` (> 0): how many, by cause, node type and size, and the mean
    of each part of their wait."""
    jobs = [w for w in waits if w.wait_s >= threshold and w.wait_s > 0]
    n = len(jobs)

    def count(key) -> dict:
        out: dict[str, int] = {}
        for w in jobs:
            out[key(w)] = out.get(key(w), 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    return {
        "threshold_s": round(threshold, 1),
        "jobs": n,
        "by_cause": count(lambda w: w.cause),
        "by_instance_type": count(lambda w: w.instance_type or "-"),
        "by_size": count(lambda w: _size(w.gpus)),
        "mean_s": {p: round(sum(getattr(w, p) for w in jobs) / n, 1) if n else 0.0 for p in PARTS},
    }


def breakdown(waits: list[JobWait], p95: float, p99: float) -> dict:
    """The ``--json`` entry ``wait_breakdown``: every job's mean parts, the causes over all jobs that waited, and
    the tails at the p95 and p99."""
    waited = [w for w in waits if w.wait_s > 0]
    n = len(waits) or 1
    return {
        "mean_s": {p: round(sum(getattr(w, p) for w in waits) / n, 1) for p in PARTS},
        "waited_by_cause": tail(waited, 1e-9)["by_cause"] if waited else {},
        "tail_p95": tail(waits, p95),
        "tail_p99": tail(waits, p99),
    }


def as_rows(waits: list[JobWait]) -> list[dict]:
    return [asdict(w) for w in waits]
