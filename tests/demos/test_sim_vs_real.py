"""The simulator against the real local stack on `make demo`'s bursts (demos/sim_vs_real.py): the comparison's
rules, and (make e2e) the demo on the real control plane beside the simulator's replay of it."""

from __future__ import annotations

import pytest

from demos import sim_vs_real


def test_within_tolerance_agrees() -> None:
    c = sim_vs_real.compare(59, [240.0, 330.0, 400.0], 64, [231.0, 350.0, 350.0])
    assert c.agrees, c.problems
    assert c.lines()[-1].startswith("simulator and real stack agree")


def test_each_disagreement_is_named() -> None:
    c = sim_vs_real.compare(59, [60.0, 330.0, 900.0], 80, [231.0, None, 350.0])
    assert c.problems == [
        "nodes bought: simulated 80, real 59",
        "burst 1: 231 s simulated, 60 s real",
        "burst 2: never all running in the simulator, 330 s on the real stack",
        "burst 3: 350 s simulated, 900 s real",
    ]
    assert "DISAGREE" in c.lines()[1]
    assert not c.nodes_agree
    assert sim_vs_real.compare(
        59, [60.0], 64, [900.0]
    ).nodes_agree  # the waits alone do not make nodes disagree


@pytest.mark.e2e
def test_the_simulator_agrees_with_the_real_stack_on_the_demo(tmp_path) -> None:
    from autoscaler.demo.run import COMPRESSION, SCAN_INTERVAL_S, run_demo
    from clusterspec.loader import load_spec
    from demos.cluster import real_cluster
    from localcluster import binaries

    if binaries.missing((*binaries.CONTROL_PLANE, "kwok")):
        pytest.skip("the local cluster's binaries are not built (make tools)")
    summary = run_demo(None, tmp_path / "demo", cluster=real_cluster)
    compared = sim_vs_real.check(
        load_spec(),
        summary["group_nodes_seen"],
        [s * COMPRESSION for s in summary["waves"].values()],
        COMPRESSION,
        SCAN_INTERVAL_S,
    )
    print("\n".join(compared.lines()))
    print(f"records: {tmp_path / 'demo'}")
    # the nodes bought must agree; the waits are reported (demos/sim_vs_real.py: the demo's 60x compression turns
    # each wall second of the real stack's own latency into a model minute)
    assert compared.nodes_agree, "\n".join(compared.lines())


def test_the_simulator_runs_the_autoscaler_as_the_demo_runs_it() -> None:
    """The real autoscaler reads the wall clock: at the demo's 60x its 2-s scan interval is 120 model seconds and
    its batch window (a pass 1 s after the last new pending pod, 10 s after the first at the latest) 60 and 600;
    the simulator's defaults for replays stay the autoscaler's own (10 s, 1 s and 10 s of model time)."""
    from autoscaler.sim.policies.batch import BatchPolicy
    from autoscaler.sim.runner import Run
    from autoscaler.sim.scenarios import demo_scenario
    from clusterspec.loader import load_spec

    spec, factory = sim_vs_real.as_run(load_spec(), 60.0, 2)
    run = Run(demo_scenario(spec), spec, sim_vs_real.POLICY, factory)
    assert run.scan == 120.0
    assert run.policy.batch_window == (60.0, 600.0)
    assert load_spec().autoscaler.scan_interval_s == 10
    assert BatchPolicy.batch_window == (1.0, 10.0)
