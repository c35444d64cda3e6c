"""The faults of issue 28 ("never kill a job, round two"), each against the real ``autoscaler run`` process(es),
checked with kubectl and boto3 (and the harness's own record of what the API and AWS were asked), never the
autoscaler's logs. Each scenario prints one line of figures (``FIGURES ...``; ``pytest -s`` shows them).

Every scenario ends by checking the invariants the world's sampler watched all along: desired capacity never above a
group's maximum nor below the instances it has (outside the one scenario that injects exactly that).
"""

from __future__ import annotations

import time

from tests.faults.harness import wait_until
from tests.faults.test_faults import EAST, WEST, _gpu_pod


def figures(name: str, **values) -> None:
    print(f"FIGURES {name}: " + ", ".join(f"{k}={v}" for k, v in values.items()))


# -- recovery ---------------------------------------------------------------------------------------------------------
def test_watches_cut_every_2_s_keep_the_caches_fresh_and_a_new_pod_scaled_up_promptly(world):
    """Every watch (pods, nodes, PDBs) is cut 2 s after it opens, for 30 s: the caches must stay within a few scan
    intervals (1 s here) of the API, and a pod created then must be scaled up as promptly as without the fault.
    (A back-off that never resets reaches 16 s by then: caches 16 s old, the pod seen only at the next relist.)"""
    r = world.replica("solo")
    world.faults.cut_watches_s = 2.0
    ages: list[float] = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        for cache in ("pods", "nodes"):
            age = r.metric("autoscaler_cache_age_seconds", cache=cache)
            if age is not None:
                ages.append(age)
        time.sleep(0.5)
    created = time.monotonic()
    _gpu_pod(world, "train-cut")
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] >= 1, 30, "the new pod's scale-up")
    took = time.monotonic() - created
    figures("watch-cuts", cuts=world.faults.watch_cuts, max_cache_age_s=f"{max(ages):.1f}",
            scale_up_after_s=f"{took:.1f}")  # fmt: skip
    assert world.faults.watch_cuts >= 10
    assert max(ages) <= 5.0, f"a cache grew {max(ages):.1f} s old while the API answered"
    assert took <= 6.0, f"the new pod was scaled up {took:.1f} s after it was created"
    assert world.group(EAST)["DesiredCapacity"] == 0
    assert not world.violations, world.violations


# -- no money on vanished pods ------------------------------------------------------------------------------------------
def _set_desired_writes(door, group: str) -> list[int]:
    return [int(w["params"]["DesiredCapacity"]) for w in door.writes
            if w["action"] == "SetDesiredCapacity" and w["group"] == group]  # fmt: skip


def test_a_burst_across_the_periodic_scan_is_bought_in_one_pass(world):
    """Four 8-GPU pods arrive 0.6 s apart (a burst over 1.8 s, across at least one periodic scan of 1 s): the
    periodic pass must honour the batching window, so the group is raised once, to 4, not in steps."""
    r = world.replica("solo")
    time.sleep(2)  # passes are running on the periodic scan
    for i in range(4):
        _gpu_pod(world, f"train-burst-{i}")
        time.sleep(0.6)
    wait_until(lambda: world.group(WEST)["DesiredCapacity"] == 4, 30, "the burst's scale-up")
    time.sleep(3)
    writes = _set_desired_writes(r.door, WEST)
    figures("burst", set_desired_calls=len(writes), values=writes, nodes_bought=world.group(WEST)["DesiredCapacity"],
            nodes_needed=4)  # fmt: skip
    assert writes == [4], f"the burst was bought in steps: {writes}"
    assert world.group(EAST)["DesiredCapacity"] == 0
    assert not world.violations, world.violations
