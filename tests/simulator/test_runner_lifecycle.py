"""The simulator runs on the model's node lifecycle (docs/model.md, "Node lifecycle"): every node our policy
launches is first seen NotReady, tainted and without its GPUs, and only later usable; every job still finishes."""

from __future__ import annotations

from clusterspec.loader import load_spec
from simulator.model.boot import NodeLifecycle
from simulator.policies import make_policy
from simulator.runner import Run
from simulator.scenarios import trace_scenario
from tests.support import ROOT

HERE = ROOT / "tests/simulator"
GPU = "nvidia.com/gpu"


def _run(lifecycle: NodeLifecycle | None):
    scenario = trace_scenario(HERE / "small_trace.csv")
    scenario.lifecycle = lifecycle
    run = Run(scenario, load_spec(), "batch", lambda ctx, r: make_policy("batch", ctx, r))
    first: dict[str, dict] = {}

    def watch(kind: str, event: str, obj: dict) -> None:
        if kind == "nodes" and event == "ADDED":
            ready = next(c["status"] for c in obj["status"]["conditions"] if c["type"] == "Ready")
            first[obj["metadata"]["name"]] = {
                "ready": ready,
                "taints": {t["key"] for t in obj["spec"].get("taints") or ()},
                "gpus": obj["status"]["allocatable"].get(GPU),
            }

    run.model.subscribe(watch)
    record = run.run()
    return run, record, first


def test_nodes_launched_in_a_simulation_boot_through_the_lifecycle():
    run, record, first = _run(None)
    assert first, "the small trace needs new nodes"
    for name, seen in first.items():
        assert seen["ready"] == "False", name
        assert {"node.kubernetes.io/not-ready", "node.cloudprovider.kubernetes.io/uninitialized"} <= seen[
            "taints"
        ]
        assert seen["gpus"] is None, f"{name}: GPUs advertised before the device plugin ran"
    assert run.model.stats.pods_succeeded == run.total_pods
    assert all(o.end_s is not None for o in record.jobs.values())


def test_the_instant_lifecycle_registers_nodes_ready():
    _, _, first = _run(NodeLifecycle.instant())
    assert first and {s["ready"] for s in first.values()} == {"True"}
