from __future__ import annotations

from demos.autoscaler_demo.workload import wave_pods, waves
from simulator.model.pods import gang_key


def test_three_waves_of_1_60_and_320_gpus():
    plan = waves()
    assert [w.gpus for w in plan] == [1, 60, 320]
    assert [w.at_s for w in plan] == sorted(w.at_s for w in plan)


def test_the_sweep_has_gangs_and_names_are_unique():
    pods = [p for w in waves() for p in wave_pods(w)]
    names = [p["metadata"]["name"] for p in pods]
    assert len(names) == len(set(names))
    gangs = {gang_key(p) for p in wave_pods(waves()[2])} - {None}
    assert len(gangs) == 8  # the 16-GPU jobs, two pods each
