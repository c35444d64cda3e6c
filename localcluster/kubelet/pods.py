"""A pod on the process kubelet: its containers' runs, restarts under the pod's restartPolicy with CrashLoopBackOff
(backoff.py), its init containers in order before its containers, graceful termination, and the status the kubelet
writes for it (pkg/kubelet/kubelet_pods.go ``generateAPIPodStatus``, ``getPhase``; pkg/kubelet/status).

A pod whose images this host cannot run (images.py) has no process: it is shown Running, every container running
and every init container Completed, until it is deleted, as kwok shows the pods of the nodes it fakes."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from localcluster.kubelet.backoff import Backoff
from localcluster.kubelet.containers import Spec
from localcluster.kubelet.process import Run, iso, start


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.Duration.String`` writes whole seconds: 10s, 1m20s, 5m0s."""
    s = int(seconds)
    return f"{s // 60}m{s % 60}s" if s >= 60 else f"{s}s"


@dataclass
class Box:
    """A container of the pod and its runs."""

    name: str
    image: str
    spec: Spec | None  # None: an image this host cannot run
    init: bool = False
    runs: list[Run] = field(default_factory=list)
    waiting: tuple[str, str] | None = None  # (reason, message) while in back-off
    done: bool = False  # finished for good: no restart will follow

    @property
    def current(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def alive(self) -> bool:
        return self.current is not None and not self.current.poll()


class PodRun:
    def __init__(self, pod: dict, folder: Path, inits: list[Box], mains: list[Box], backoff: Backoff,
                 host_ip: str, pod_ip: str, clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        meta = pod["metadata"]
        self.uid, self.namespace, self.name = meta["uid"], meta["namespace"], meta["name"]
        self.policy = pod["spec"].get("restartPolicy", "Always")
        self.folder = folder
        self.inits, self.mains = inits, mains
        self.backoff = backoff
        self.clock = clock
        self.host_ip, self.pod_ip = host_ip, pod_ip
        self.started = time.time()
        self.failed = False  # an init container failed under restartPolicy Never
        self.kill_at: float | None = None  # terminating: SIGKILL at this time
        self.closed = False  # its exec and port-forward streams ended (agent.py), once its processes are gone
        self.processes = all(b.spec is not None for b in [*inits, *mains])
        self._transitions: dict[str, tuple[str, str]] = {}

    # --- running -----------------------------------------------------------------------------------------
    def boxes(self) -> list[Box]:
        return [*self.inits, *self.mains]

    def box(self, name: str) -> Box | None:
        return next((b for b in self.boxes() if b.name == name), None)

    def _start(self, box: Box) -> None:
        assert box.spec is not None
        box.runs.append(
            start(box.spec, len(box.runs), self.folder / "logs" / box.name, self.folder, self.clock)
        )
        box.waiting = None

    def _restart(self, box: Box) -> None:
        """kuberuntime ``doBackOff``: restart now, or wait out the back-off since the run finished."""
        key, last = f"{self.uid}/{box.name}", box.current
        assert last is not None and last.finished_mono is not None
        if self.backoff.in_backoff_since(key, last.finished_mono):
            window = go_duration(self.backoff.window(key))
            box.waiting = ("CrashLoopBackOff", f"back-off {window} restarting failed container={box.name} "
                                               f"pod={self.name}_{self.namespace}({self.uid})")  # fmt: skip
            return
        self.backoff.next(key, last.finished_mono)
        self._start(box)

    def step(self) -> None:
        """Advances the pod: polls its processes, starts what is due, kills what outlived its grace period."""
        if not self.processes:
            return
        if self.kill_at is not None:
            for b in self.boxes():
                if b.alive() and self.clock() >= self.kill_at:
                    b.current.signal(signal.SIGKILL)
            return
        if self.failed:
            return
        for box in self.inits:
            if box.done:
                continue
            if box.current is None:
                self._start(box)
                return
            if not box.current.poll():
                return
            if box.current.exit_code == 0:
                box.done = True
                continue
            if self.policy == "Never":  # an init container's failure fails the pod
                box.done, self.failed = True, True
                return
            self._restart(box)
            return
        for box in self.mains:
            if box.current is None:
                self._start(box)
                continue
            if box.done or not box.current.poll():
                continue
            code = box.current.exit_code
            if self.policy == "Always" or (self.policy == "OnFailure" and code != 0):
                self._restart(box)
            else:
                box.done = True

    def terminate(self, grace_s: float) -> None:
        """Graceful deletion (kuberuntime ``killContainer``): SIGTERM now, SIGKILL after ``grace_s``."""
        if self.kill_at is not None:
            self.kill_at = min(self.kill_at, self.clock() + grace_s)
            return
        self.kill_at = self.clock() + grace_s
        for b in self.boxes():
            b.waiting = None
            if b.alive():
                b.current.signal(signal.SIGTERM)

    def kill(self) -> None:
        for b in self.boxes():
            if b.alive():
                b.current.signal(signal.SIGKILL)
                b.current.popen.wait(timeout=10)
                b.current.poll()

    def alive(self) -> bool:
        return any(b.alive() for b in self.boxes())

    def finished(self) -> bool:
        return self.phase() in ("Succeeded", "Failed")

    # --- status ------------------------------------------------------------------------------------------
    def _inits_done(self) -> bool:
        return not self.processes or all(b.done and not self.failed for b in self.inits)

    def phase(self) -> str:
        if not self.processes:
            return "Running"
        if self.failed:
            return "Failed"
        if not self._inits_done():
            return "Pending"
        if self.kill_at is not None and not self.alive():
            codes = [b.current.exit_code for b in self.mains if b.current is not None]
            return "Succeeded" if codes and all(c == 0 for c in codes) else "Failed"
        if all(b.done for b in self.mains):
            return "Succeeded" if all(b.current.exit_code == 0 for b in self.mains) else "Failed"
        if any(b.runs for b in self.mains):
            return "Running"
        return "Pending"

    def _terminated(self, run: Run, box: Box) -> dict:
        reason = "Completed" if run.exit_code == 0 else "Error"
        out = {"exitCode": run.exit_code, "reason": reason, "startedAt": iso(run.started),
               "finishedAt": iso(run.finished or run.started), "containerID": self._id(box, run)}  # fmt: skip
        if run.message:
            out["message"] = run.message
        return out

    def _id(self, box: Box, run: Run) -> str:
        return f"process://{self.uid}-{box.name}-{run.n}"

    def _container_status(self, box: Box, pending_reason: str) -> dict:
        out = {"name": box.name, "image": box.image, "imageID": "", "restartCount": max(0, len(box.runs) - 1),
               "ready": False, "started": False, "lastState": {}}  # fmt: skip
        run = box.current
        if box.spec is None:  # no process: shown running
            if box.init:
                out.update(ready=True, state={"terminated": {"exitCode": 0, "reason": "Completed",
                                                             "startedAt": iso(self.started),
                                                             "finishedAt": iso(self.started)}})  # fmt: skip
            else:
                out.update(ready=True, started=True, state={"running": {"startedAt": iso(self.started)}})
            return out
        if run is None:
            out["state"] = {"waiting": {"reason": pending_reason}}
            return out
        out["containerID"] = self._id(box, run)
        before = box.runs[-2] if len(box.runs) > 1 else None
        if not run.poll():
            out.update(ready=not box.init, started=True, state={"running": {"startedAt": iso(run.started)}})
            if before is not None:
                out["lastState"] = {"terminated": self._terminated(before, box)}
        elif box.waiting is not None:
            out["state"] = {"waiting": {"reason": box.waiting[0], "message": box.waiting[1]}}
            out["lastState"] = {"terminated": self._terminated(run, box)}
        else:
            out["state"] = {"terminated": self._terminated(run, box)}
            out["ready"] = box.init and run.exit_code == 0
            if before is not None:
                out["lastState"] = {"terminated": self._terminated(before, box)}
        return out

    def _condition(self, kind: str, ok: bool, reason: str = "", message: str = "") -> dict:
        status = "True" if ok else "False"
        prev = self._transitions.get(kind)
        if prev is None or prev[0] != status:
            self._transitions[kind] = (status, iso(time.time()))
        out = {"type": kind, "status": status, "lastProbeTime": None,
               "lastTransitionTime": self._transitions[kind][1]}  # fmt: skip
        if not ok and reason:
            out.update(reason=reason, message=message)
        return out

    def status(self) -> dict:
        phase = self.phase()
        inits = [self._container_status(b, "PodInitializing") for b in self.inits]
        init_reason = "ContainerCreating" if self._inits_done() else "PodInitializing"
        mains = [self._container_status(b, init_reason) for b in self.mains]
        incomplete = [s["name"] for s in inits if not s["ready"]]
        unready = [s["name"] for s in mains if not s["ready"]]
        done = phase in ("Succeeded", "Failed")
        ready_reason = "PodCompleted" if done else "ContainersNotReady"
        conditions = [
            self._condition("PodReadyToStartContainers", not (done and self.processes and not self.alive())),
            self._condition("Initialized", not incomplete or done and not self.failed, "ContainersNotInitialized",
                            f"containers with incomplete status: [{' '.join(incomplete)}]"),
            self._condition("Ready", not unready, ready_reason,
                            f"containers with unready status: [{' '.join(unready)}]"),
            self._condition("ContainersReady", not unready, ready_reason,
                            f"containers with unready status: [{' '.join(unready)}]"),
            self._condition("PodScheduled", True),
        ]  # fmt: skip
        out = {
            "phase": phase, "conditions": conditions, "hostIP": self.host_ip, "hostIPs": [{"ip": self.host_ip}],
            "podIP": self.pod_ip, "podIPs": [{"ip": self.pod_ip}], "startTime": iso(self.started),
            "containerStatuses": mains,
        }  # fmt: skip
        if inits:
            out["initContainerStatuses"] = inits
        return out
