"""Benchmark: how long a pass takes with 500 pod Events, Events written in the pass (as before the Event writer:
one create per Event, in line) against Events queued to the writer.

``python -m demos.bench_events [--pods 500] [--repeat 3]``: the real Kubernetes adapter against a real control plane
of its own (localcluster: etcd and kube-apiserver on loopback, each write as long as admission and etcd make it),
``--pods`` pending pods that no node takes, a cloud that only records its calls. Prints, per mode, the pass time,
the time from the pass's start to its scaling call, and for the writer the time until its last Event was written.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from autoscaler.adapters.events import EventWriter
from autoscaler.adapters.kubernetes import COMPONENT, KubeCluster, KubeEventSink, api_client
from autoscaler.controller import Controller, ControllerConfig
from localcluster.stack import Stack

V100 = {"research.cluster/gpu-model": "v100"}
ALLOCATABLE = {"cpu": "63260m", "memory": "470000Mi", "nvidia.com/gpu": "8", "pods": "110"}
GROUP = "dlr-us-west-2-gpu-v100x8"
START = 1_767_225_600.0


class _Cloud:
    """One group; records when the scaling call came."""

    def __init__(self):
        self.group = {"name": GROUP, "region": "us-west-2", "zones": ["us-west-2a"], "instance_type": "p3.16xlarge",
                      "min": 0, "max": 1000, "desired": 0, "labels": dict(V100),
                      "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                      "allocatable": ALLOCATABLE, "priority": 0, "price_per_hour": 1.0, "instances": []}  # fmt: skip
        self.scaled_at: float | None = None

    def list_groups(self):
        return [dict(self.group)]

    def set_desired(self, group, desired):
        self.scaled_at = time.perf_counter()
        self.group["desired"] = desired

    def terminate_instance(self, group, instance_id):
        raise AssertionError("no scale-down here")

    def scaling_failures(self, since):
        return []


class _InlineEvents(KubeCluster):
    """Events as the adapter wrote them before the Event writer: one create per Event, inside the pass."""

    def record_event(self, pod, reason, message, type="Normal"):  # noqa: A002
        event = self.events.build(
            {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
             "namespace": pod["metadata"]["namespace"], "uid": pod["metadata"].get("uid")},
            reason, message, type,
        )  # fmt: skip
        self.events.sink.create(event)
        return True

    def record_status_event(self, reason, message, type="Normal"):  # noqa: A002
        return True


def _pods(stack: Stack, namespace: str, n: int) -> None:
    """``n`` pending 1-GPU pods (nothing takes them: the cluster has no node of the group)."""
    import json

    items = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"train-{i}", "namespace": namespace},
              "spec": {"nodeSelector": dict(V100),
                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                       "containers": [{"name": "main", "image": "train",
                                       "resources": {"requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"},
                                                     "limits": {"nvidia.com/gpu": "1"}}}]}}
             for i in range(n)]  # fmt: skip
    stack.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def _one(stack: Stack, mode: str, pods: int, run: int) -> dict:
    namespace = f"research-{mode}-{run}"  # Events of a run of their own
    stack.kubectl("create", "namespace", namespace)
    deadline = time.monotonic() + 30
    while stack.kubectl("-n", namespace, "get", "sa", "default", check=False).returncode:
        if time.monotonic() > deadline:
            raise RuntimeError(f"namespace {namespace}: no default ServiceAccount after 30 s")
        time.sleep(0.2)
    _pods(stack, namespace, pods)
    kubeconfig = str(stack.admin_kubeconfig)
    api = api_client(kubeconfig)
    cls = _InlineEvents if mode == "inline" else KubeCluster
    kube = cls(api, namespace="kube-system")
    sink = KubeEventSink(api_client(kubeconfig), 30.0)
    kube.events = EventWriter(sink, component=COMPONENT)  # the production defaults: 50/s, burst 100
    kube.sync()
    cloud = _Cloud()
    ctl = Controller(kube, cloud, ControllerConfig(regions=["us-west-2"]), lambda: START)
    start = time.perf_counter()
    result = ctl.run_once()
    end = time.perf_counter()
    kube.flush_events(600)
    written = time.perf_counter()
    kube.close_events(5)
    sink.close()
    api.close()
    return {
        "pass_s": end - start,
        "to_scaling_call_s": (cloud.scaled_at or end) - start,
        "events_done_s": written - start,
        "events": result.events_written,
        "errors": len(result.errors),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m demos.bench_events", description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=500)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-events-") as tmp:
        stack = Stack(Path(tmp)).start()
        try:
            _report(stack, args)
        finally:
            stack.stop()
    return 0


def _report(stack: Stack, args) -> None:
    print(f"{args.pods} pending pods on the real API server, median of {args.repeat}")
    print(f"{'mode':8} {'pass s':>8} {'to scaling call s':>18} {'Events written by s':>20} {'Events':>7}")
    for mode in ("inline", "writer"):
        runs = [_one(stack, mode, args.pods, i) for i in range(args.repeat)]
        med = {
            k: statistics.median(r[k] for r in runs) for k in ("pass_s", "to_scaling_call_s", "events_done_s")
        }
        print(f"{mode:8} {med['pass_s']:8.3f} {med['to_scaling_call_s']:18.3f} {med['events_done_s']:20.3f} "
              f"{runs[0]['events']:7d}")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
