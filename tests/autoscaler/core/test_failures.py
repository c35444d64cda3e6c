"""Back-off: doubling per consecutive failure up to the maximum, carried from plan to snapshot to plan."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from autoscaler.core.timeutil import parse_time, show_time

GROUP = {
    "name": "g",
    "region": "r",
    "zones": ["ra"],
    "instance_type": "m6i.large",
    "min": 0,
    "max": 5,
    "desired": 0,
}


def test_backoff_doubles_up_to_the_maximum_and_is_carried_between_plans() -> None:
    config = PlannerConfig(backoff_base_s=60, backoff_max_s=300)
    now = parse_time("2025-01-31T12:00:00Z", "", [])
    state: dict = {}
    delays = []
    for loop in range(5):
        at = now + timedelta(minutes=10 * loop)
        snap = {
            "now": show_time(at),
            "groups": [GROUP],
            "nodes": [],
            "pods": [],
            "group_state": state,
            "scaling_failures": [
                {
                    "group": "g",
                    "reason": "spot",
                    "message": "",
                    "at": show_time(at - timedelta(seconds=5)),
                    "missing": 1,
                }
            ],
        }
        state = plan(parse_snapshot(snap), config).to_dict()["group_state"]
        delays.append((parse_time(state["g"]["backoff_until"], "", []) - at).total_seconds())
    assert delays == [60, 120, 240, 300, 300]
    assert state["g"]["failures"] == 5


def test_an_old_failure_seen_again_is_not_counted_twice() -> None:
    failure = {"group": "g", "reason": "spot", "message": "", "at": "2025-01-31T11:59:00Z", "missing": 1}
    first = plan(
        parse_snapshot(
            {
                "now": "2025-01-31T12:00:00Z",
                "groups": [GROUP],
                "nodes": [],
                "pods": [],
                "scaling_failures": [failure],
            }
        )
    ).to_dict()["group_state"]
    again = plan(
        parse_snapshot(
            {
                "now": "2025-01-31T12:00:10Z",
                "groups": [GROUP],
                "nodes": [],
                "pods": [],
                "scaling_failures": [failure],
                "group_state": first,
            }
        )
    ).to_dict()["group_state"]
    assert again == first
