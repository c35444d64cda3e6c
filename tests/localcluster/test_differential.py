"""The planner against kube-scheduler on the real control plane (localcluster/differential.py): each case of
data/differential_cases.yaml is planned from the adapter's snapshot of the real API server, the nodes the plan
buys register as their instances would, and kube-scheduler (or the gang scheduler) must bind every pod where the
plan put it and use every node it bought."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from localcluster import binaries, differential
from localcluster.shared import Cluster
from localcluster.stack import Stack
from simulator.model.spec_groups import groups_from_spec

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CASES = yaml.safe_load((HERE / "data/differential_cases.yaml").read_text())


@pytest.fixture(scope="module")
def groups() -> dict[str, dict]:
    spec = yaml.safe_load((ROOT / "cluster.yaml").read_text())
    prefix = f"{spec['name']}-us-west-2-"
    return {g["name"].removeprefix(prefix): g for g in groups_from_spec(spec, ["us-west-2"])}


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    """A control plane of this module's own, bare (no DaemonSets): the shared one carries whatever other tests
    deployed, and a DaemonSet that tolerates every taint (flannel, the node exporter) takes room on the case's
    nodes, so what fits would depend on which tests ran first."""
    if binaries.missing((*binaries.CONTROL_PLANE, "kwok")):
        pytest.skip("the local cluster's binaries are not built (make tools)")
    stack = Stack(tmp_path_factory.mktemp("differential")).start()
    try:
        yield Cluster(stack.workdir, stack.server, stack.admin_kubeconfig)
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def gang_scheduler(kube, tmp_path_factory):
    if binaries.missing(("scheduler",)):
        pytest.skip("the gang scheduler is not built (make tools)")
    name = kube.unique("gang")
    proc = differential.start_gang_scheduler(kube, tmp_path_factory.mktemp("gang"), name)
    yield name
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kube_scheduler_places_every_pod_where_the_plan_put_it(kube, groups, gang_scheduler, case) -> None:
    existing = [{**e, "group": groups[e["group"]]["name"]} for e in case.get("existing") or ()]
    verdict = differential.run(kube, {**case, "existing": existing}, list(groups.values()),
                               gang_scheduler=gang_scheduler)  # fmt: skip
    short = {g["name"]: k for k, g in groups.items()}
    assert {short[g]: n for g, n in verdict.scale_up.items()} == case["expect"]["scale_up"], verdict.lines()
    assert verdict.agrees, "\n".join(verdict.lines())


def test_the_verdict_names_each_kind_of_disagreement() -> None:
    v = differential.compare(
        scale_up={"g": 2, "h": 1},
        placements={"ns/a": "new:g:0", "ns/b": "new:g:1", "ns/c": "node-1", "ns/d": "new:h:0"},
        unschedulable={"ns/e": "no group fits"},
        bound={"ns/a": "n-g0", "ns/b": "node-2", "ns/c": "node-1", "ns/e": "n-g0"},
        node_group={"n-g0": "g", "n-g1": "g", "n-h0": "h", "node-1": "g", "node-2": "g"},
        bought={"n-g0": "g", "n-g1": "g", "n-h0": "h"},
    )
    assert v.as_planned == ["ns/a", "ns/c"]
    assert v.elsewhere == ["ns/b: planned on g, bound to node-2 (group g)"]
    assert v.never_placed == ["ns/d (planned on h)"]
    assert v.unplanned == ["ns/e: the planner said 'no group fits'; kube-scheduler bound it to n-g0"]
    assert v.idle_purchases == ["n-g1 (g)", "n-h0 (h)"]
    assert not v.agrees
