"""``pod_fits_node`` on Kubernetes objects (fit_cases.yaml) and its agreement with the planner."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from autoscaler.core.errors import SnapshotError
from autoscaler.core.fit import pod_fits_node
from tests.support import load_yaml

DATA = load_yaml(Path(__file__).parent / "fit_cases.yaml")


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_pod_fits_node(case: dict) -> None:
    node = copy.deepcopy(DATA["node"])
    for part, patch in (case.get("node_patch") or {}).items():
        node[part].update(patch)
    assert pod_fits_node(case["pod"], node, case.get("on_node") or []) == case["reason"]


def test_bad_pod_raises_snapshot_error() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "x"}}}]},
    }
    with pytest.raises(SnapshotError) as e:
        pod_fits_node(pod, DATA["node"], [])
    assert e.value.lines == [
        "pod default/p.spec.containers[0].resources.requests.cpu: 'x' is not a Kubernetes quantity; "
        'use e.g. "500m", "2", "64Gi"'
    ]
