"""The demo's bursty workload: what a research group submits in an afternoon, compressed into seconds.

Three waves (``at_s`` is real seconds after the first; durations are cluster-model seconds, so at the demo's
compression of 60 a 30-minute job runs 30 real seconds):

1. one GPU to try an idea;
2. 60 GPUs of experiments: 12 single-GPU runs, 4 jobs of 4 GPUs, 4 of 8;
3. a 320-GPU sweep: 24 jobs of 8 GPUs and 8 distributed jobs of 16 GPUs (Indexed Jobs of 2 pods, placed
   all-or-nothing in one region).

Pods are built by ``autoscaler.sim.workload.job_pods``, the simulator's rule, and created through the
Kubernetes API like ``kubectl create`` would.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.model.pods import DURATION_ANNOTATION
from autoscaler.sim.traces import Job
from autoscaler.sim.workload import job_pods


@dataclass(frozen=True)
class Wave:
    at_s: float
    title: str
    jobs: tuple[Job, ...]

    @property
    def gpus(self) -> int:
        return sum(j.gpus for j in self.jobs)


def _jobs(prefix: str, shapes: list[tuple[int, float]]) -> tuple[Job, ...]:
    return tuple(Job(f"{prefix}-{i:02d}", 0, g, d) for i, (g, d) in enumerate(shapes))


def waves() -> list[Wave]:
    experiments = [(1, 1200 + 60 * i) for i in range(12)] + [(4, 1800)] * 4 + [(8, 2400)] * 4
    sweep = [(8, 1500 + 30 * i) for i in range(24)] + [(16, 1800)] * 8
    return [
        Wave(0.0, "one GPU to try an idea", _jobs("try", [(1, 1800)])),
        Wave(6.0, "60 GPUs of experiments", _jobs("exp", experiments)),
        Wave(16.0, "a 320-GPU sweep", _jobs("sweep", sweep)),
    ]


def wave_pods(wave: Wave, gpus_per_node: int = 8) -> list[dict]:
    return [pod for job in wave.jobs for pod in job_pods(job, gpus_per_node, DURATION_ANNOTATION)]
