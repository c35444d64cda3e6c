"""The demo's view of a node's life: booting, awaiting its GPUs, usable, as the model's nodes go through them."""

from __future__ import annotations

from demos.autoscaler_demo.watch import node_stage
from tests.simulator.model.builders import group, model


def test_a_gpu_node_is_seen_booting_then_awaiting_gpus_then_usable():
    m = model(group(), boot_delays={"p3": 100})
    m.cloud.set_desired("g8", 1)
    stages = []
    for t in (100, 101, 110, 120, 140, 150):
        m.advance(t)
        (node,) = m.nodes()
        stages.append(node_stage(node))
    assert stages == ["booting", "booting", "booting", "awaiting-gpus", "awaiting-gpus", "usable"]


def test_a_cpu_node_is_usable_once_ready_and_untainted():
    m = model(group("cpu", instance_type="m6i.2xlarge", taints=[]), boot_delays={"m6i": 100})
    m.cloud.set_desired("cpu", 1)
    m.advance(119)
    assert node_stage(m.nodes()[0]) == "booting"
    m.advance(120)
    assert node_stage(m.nodes()[0]) == "usable"


def test_a_lowered_desired_capacity_is_shown_as_a_capacity_correction_not_a_scale_down(tmp_path):
    """The autoscaler lowers desired only to what AWS could launch (nodes leave one by one through
    TerminateInstanceInAutoScalingGroup), so the demo must not print it next to "only gives back empty nodes" as a
    scale-down (issue 16)."""
    import json

    from demos.autoscaler_demo.watch import Watcher

    log = tmp_path / "autoscaler.log"
    log.write_text(
        json.dumps({"message": "action", "action": "set_desired", "group": "g", "from": 0, "desired": 6}) + "\n"
        + json.dumps({"message": "action", "action": "set_desired", "group": "g", "from": 6, "desired": 2}) + "\n"
    )  # fmt: skip
    texts = [d.text for d in Watcher(None, "", [], log)._from_log()]
    assert texts == ["scale up g: 0 -> 6", "capacity correction (AWS could not launch them) g: 6 -> 2"]
