"""Any mangled snapshot either parses or raises SnapshotError (one line per problem): never another exception."""

from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.errors import SnapshotError
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.autoscaler.core.strategies import PROPERTIES
from tests.support import load_yaml

CASES = Path(__file__).parent / "cases"
BASES = [load_yaml(p)["snapshot"] for p in sorted(CASES.glob("*.yaml"))]

junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.text(max_size=6)
    | st.sampled_from(["1Gi", "-1", "In", "NoSchedule"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@PROPERTIES
@given(st.sampled_from(range(len(BASES))), st.data())
def test_mangled_snapshots_give_snapshot_errors_only(index, data) -> None:
    snap = copy.deepcopy(BASES[index])
    paths = [p for p in _paths(snap) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        node = snap
        try:
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = data.draw(junk)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        parsed = parse_snapshot(snap)
    except SnapshotError as e:
        assert e.lines and all(isinstance(line, str) and "\n" not in line for line in e.lines)
        return
    plan(parsed)
