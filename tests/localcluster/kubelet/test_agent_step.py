"""The process kubelet's step over its pods (localcluster/kubelet/agent.py ``_step``) in the order a real kubelet
keeps: a terminating pod's exec and port-forward streams are ended before the pod is deleted, even when its last
process ends while the step writes its status (slow on a loaded API server: CI once saw a port-forward outlive its
pod that way, kubectl kept forwarding to a deleted pod)."""

from __future__ import annotations

from kubernetes import client as k8s

from localcluster.kubelet.agent import ProcessKubelet


class DiesDuringTheWrite:
    """A terminating pod's run whose last process is alive at the step's first look and gone at any later one."""

    def __init__(self) -> None:
        self.uid, self.namespace, self.name = "u1", "ns", "web"
        self.kill_at = 5.0
        self.processes = True
        self.closed = False
        self.looks = 0

    def step(self) -> None:
        pass

    def finished(self) -> bool:
        return False

    def alive(self) -> bool:
        self.looks += 1
        return self.looks == 1

    def status(self) -> dict:
        return {"phase": "Running" if self.looks <= 1 else "Failed"}


class Recorder:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def merge_patch(self, path: str, body: dict) -> dict:
        self.events.append("status")
        return body

    def request(self, method: str, path: str, body: dict, missing_ok: bool = False) -> None:
        self.events.append(f"{method} {path.rsplit('/', 1)[-1]}")

    def close_pod(self, uid: str) -> None:
        self.events.append(f"close {uid}")


def _kubelet(tmp_path, events: list[str]) -> ProcessKubelet:
    conf = k8s.Configuration(host="https://127.0.0.1:6443")
    kubelet = ProcessKubelet(k8s.ApiClient(conf), tmp_path)
    kubelet.api = kubelet.streaming = Recorder(events)  # type: ignore[assignment]
    return kubelet


def test_a_pod_whose_process_ends_mid_step_has_its_streams_closed_before_it_is_deleted(tmp_path) -> None:
    events: list[str] = []
    kubelet = _kubelet(tmp_path, events)
    run = DiesDuringTheWrite()
    kubelet.pods[run.uid] = run  # type: ignore[assignment]
    kubelet._step()
    assert events == ["status"] and run.uid in kubelet.pods  # alive at the look: not closed, not deleted yet
    kubelet._step()
    assert events == ["status", "close u1", "status", "DELETE web"]
    assert run.closed and run.uid not in kubelet.pods
