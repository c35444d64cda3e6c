"""PlannerConfig: defaults, a settings mapping, the cluster spec (warm pools by ASG name), bad values."""

from __future__ import annotations

import pytest

from autoscaler.core.config import PlannerConfig
from autoscaler.core.errors import SnapshotError
from tests.support import example_spec_data


def test_from_the_cluster_spec() -> None:
    spec = example_spec_data()
    config = PlannerConfig.from_spec(spec)
    assert config.idle_threshold_s == spec["autoscaler"]["idle_threshold_s"]
    assert config.max_new_nodes_per_loop == spec["autoscaler"]["max_new_nodes_per_loop"]
    # cluster.yaml: gpu-t4 has warm_pool 1 in every region (the regions share their node groups)
    assert config.warm_pool == {f"dlr-{r}-gpu-t4": 1 for r in ("us-west-2", "us-east-1", "us-east-2")}


def test_bad_values_are_one_line_each() -> None:
    with pytest.raises(SnapshotError) as e:
        PlannerConfig.from_dict(
            {"idle_threshold_s": "ten", "warm_pool": {"g": -1}, "priority_cutoff": -5}, "s.yaml"
        )
    assert e.value.lines == [
        "s.yaml.idle_threshold_s: expected a non-negative number, got 'ten'",
        "s.yaml.warm_pool: expected a mapping of group name to a number of nodes, got {'g': -1}",
    ]
