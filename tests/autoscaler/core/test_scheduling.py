"""The Scheduler, the one home of the scheduler's rules: node-level answers shared by shapes that differ only in
their requests, room on a node, and the reason when a node takes none."""

from __future__ import annotations

from autoscaler.core.bins import EXISTING, Bin, PodClass
from autoscaler.core.fit import NodeState
from autoscaler.core.podspec import parse_shape
from autoscaler.core.scheduling import Scheduler


def _shape(cpu: str, selector: dict | None = None):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if selector:
        spec["nodeSelector"] = selector
    errors: list[str] = []
    shape = parse_shape(spec, "lab", "pod", errors)
    assert not errors
    return shape


def _node(sched: Scheduler, labels: dict, cpu_milli: int) -> Bin:
    st = NodeState({"cpu": cpu_milli, "pods": 110_000})
    return Bin(EXISTING, None, "r", "n1", labels, (), sched.template_id(labels, ()), st)


def test_shapes_differing_in_requests_share_the_node_level_answer() -> None:
    small, big = _shape("1", {"pool": "a"}), _shape("3", {"pool": "a"})
    assert small is not big and small.static_key is big.static_key
    sched = Scheduler()
    b = _node(sched, {"pool": "a"}, 4000)
    assert sched.room(PodClass(small, frozenset(), 0, None), b) == 4
    assert sched.room(PodClass(big, frozenset(), 0, None), b) == 1
    assert len(sched._static) == 1  # one static answer for both shapes on this template


def test_why_not_names_the_filter_that_refuses() -> None:
    sched = Scheduler()
    b = _node(sched, {"pool": "b"}, 2000)
    assert sched.room(PodClass(_shape("1", {"pool": "a"}), frozenset(), 0, None), b) == 0
    assert sched.why_not(PodClass(_shape("1", {"pool": "a"}), frozenset(), 0, None), b) == (
        "does not match nodeSelector pool=a"
    )
    assert sched.why_not(PodClass(_shape("3"), frozenset(), 0, None), b) == "needs 3 cpu; 2 free"
