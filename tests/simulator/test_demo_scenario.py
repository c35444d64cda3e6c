"""The simulator against what was measured side by side with the real cluster-autoscaler (side_by_side.yaml):
the demo's bursts through the cluster model under ours, cluster-autoscaler one per region and in the primary
region only, each figure within the measured range widened by the tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterspec.loader import load_spec
from simulator.metrics import summarize
from simulator.scenarios import demo_scenario
from simulator.simulate import run_policy
from tests.support import load_yaml

DATA = load_yaml(Path(__file__).parent / "side_by_side.yaml")


@pytest.fixture(scope="module")
def demo():
    spec = load_spec()
    return spec, demo_scenario(spec)


@pytest.mark.parametrize("policy", sorted(DATA["measured"]))
def test_the_demo_scenario_reproduces_the_side_by_side(demo, policy: str) -> None:
    spec, scenario = demo
    figures = summarize(run_policy(scenario, spec, policy), scenario.bursts)
    assert figures["pods"] == DATA["pods"]
    tol = DATA["tolerance"]
    for key, (low, high) in DATA["measured"][policy].items():
        assert low * (1 - tol) <= figures[key] <= high * (1 + tol), (
            f"{policy} {key}: {figures[key]}, measured {low}-{high}"
        )


def test_the_demo_scenario_is_the_demos_workload(demo) -> None:
    """The demo submits the scenario's waves (demos/autoscaler_demo/workload.py reads them), at the scenario's times
    divided by the demo's compression, with the capacity the scenario gives us-west-2."""
    from demos.autoscaler_demo.run import COMPRESSION, capacity_limits
    from demos.autoscaler_demo.workload import waves

    spec, scenario = demo
    demo_waves = waves()
    assert [w.at_s * COMPRESSION for w in demo_waves] == sorted({j.submit_s for j in scenario.jobs})
    assert [(j.id, j.gpus, j.duration_s) for w in demo_waves for j in w.jobs] == [
        (j.id, j.gpus, j.duration_s) for j in scenario.jobs
    ]
    assert capacity_limits(spec) == scenario.capacity
