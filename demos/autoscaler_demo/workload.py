"""The demo's bursty workload: what a research group submits in an afternoon, compressed into seconds.

Three waves (``at_s`` is real seconds after the first; durations are cluster-model seconds, so at the demo's
default compression of 60 a 30-minute job runs 30 real seconds, at ``--compression 15`` two minutes):

1. one GPU to try an idea;
2. 60 GPUs of experiments: 12 single-GPU runs, 4 jobs of 4 GPUs, 4 of 8;
3. a 320-GPU sweep: 24 jobs of 8 GPUs and 8 distributed jobs of 16 GPUs (Indexed Jobs of 2 pods, placed
   all-or-nothing in one region).

Pods are built by ``simulator.workload.job_pods``, the simulator's rule, and created through the
Kubernetes API like ``kubectl create`` would.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.model.pods import DURATION_ANNOTATION
from simulator.scenarios import DEMO_WAVES, demo_jobs
from simulator.traces import Job
from simulator.workload import job_pods


@dataclass(frozen=True)
class Wave:
    at_s: float
    title: str
    jobs: tuple[Job, ...]

    @property
    def gpus(self) -> int:
        return sum(j.gpus for j in self.jobs)


def waves(compression: float = 60.0) -> list[Wave]:
    """The simulator's demo scenario (simulator/scenarios.py ``DEMO_WAVES``), its model times as wall
    seconds at the run's ``compression`` (run.py ``COMPRESSION`` by default, ``invoke demo --compression``)."""
    return [
        Wave(at / compression, title, tuple(Job(j.id, 0, j.gpus, j.duration_s) for j in jobs))
        for (at, title, _), jobs in zip(DEMO_WAVES, demo_jobs(), strict=True)
    ]


def wave_pods(wave: Wave, gpus_per_node: int = 8) -> list[dict]:
    return [pod for job in wave.jobs for pod in job_pods(job, gpus_per_node, DURATION_ANNOTATION)]
