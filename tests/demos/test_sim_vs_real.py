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
    from clusterspec.loader import load_spec
    from demos.autoscaler_demo.run import COMPRESSION, run_demo
    from demos.cluster import real_cluster
    from localcluster import binaries

    if binaries.missing((*binaries.CONTROL_PLANE, "kwok")):
        pytest.skip("the local cluster's binaries are not built (make tools)")
    summary = run_demo(None, tmp_path / "demo", cluster=real_cluster)
    compared = sim_vs_real.check(
        load_spec(), summary["group_nodes_seen"], [s * COMPRESSION for s in summary["waves"].values()]
    )
    # the nodes bought must agree; the waits are reported (demos/sim_vs_real.py: the demo's 60x compression turns
    # each wall second of the real stack's own latency into a model minute)
    assert compared.nodes_agree, "\n".join(compared.lines())
