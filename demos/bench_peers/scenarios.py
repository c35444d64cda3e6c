"""The bursts both autoscalers get, as pods (the simulator's rule, ``simulator.workload.job_pods``).

- ``demo-1``, ``demo-60``, ``demo-320``: the demo's three waves (``simulator.scenarios.DEMO_WAVES``), each
  on its own, with the first region short of V100 and A100 as in the demo (room for 2 p3.16xlarge, no
  p4d.24xlarge: ``demo_capacity``);
- ``burst-2000``: 2,000 single-GPU pods at once;
- ``gang-16x8``: one job of 16 pods of 8 GPUs (128 GPUs) whose work starts only when all 16 run;
- ``delete-2s``: the 60-GPU wave, every pod deleted 2 s after it was created.

``small`` (CI): the same kinds at a size that runs in minutes (the 320-GPU wave and the 2,000 pods left out,
the gang 4 x 8). Pods carry no ownerReferences on the real stack (no Job object owns them: the garbage collector
would delete them) and run until deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterspec.spec import Cluster as Spec
from simulator.model.pods import DURATION_ANNOTATION
from simulator.scenarios import demo_capacity, demo_jobs
from simulator.traces import Job
from simulator.workload import job_pods

GPUS_PER_NODE = 8
# the bursts' own jobs run past the simulator's horizon (demos/bench_peers/sim_check.py), as the real run's pods
# run until deleted: a pod no capacity came for then stays pending there too, instead of starting on the GPUs the
# first jobs free after an hour (the 2,000-pod burst's single-region Karpenter: 960 never ran, 0 simulated)
RUN_S = 8 * 3600
# Karpenter's best users keep consolidation off running training pods (an evicted one restarts from scratch)
DO_NOT_DISRUPT = {"karpenter.sh/do-not-disrupt": "true"}


@dataclass(frozen=True)
class Burst:
    name: str
    title: str
    jobs: Callable[[], list[Job]]
    short: bool = False  # the first region short of V100 and A100, as in the demo
    delete_after_s: float | None = None

    def pods(self, annotations: dict[str, str] | None = None) -> list[dict]:
        out = []
        for job in self.jobs():
            for pod in job_pods(
                job, GPUS_PER_NODE, DURATION_ANNOTATION, gangs=False, annotations=annotations
            ):
                pod["metadata"].pop("ownerReferences", None)
                pod.pop("status", None)
                out.append(pod)
        return out

    def limits(self, spec: Spec) -> dict[tuple[str, str], int]:
        return demo_capacity(spec) if self.short else {}


def _wave(i: int) -> Callable[[], list[Job]]:
    return lambda: [Job(j.id, 0, j.gpus, j.duration_s) for j in demo_jobs()[i]]


def _singles(n: int) -> Callable[[], list[Job]]:
    return lambda: [Job(f"single-{i:04d}", 0, 1, RUN_S) for i in range(n)]


def _gang(nodes: int) -> Callable[[], list[Job]]:
    return lambda: [Job("gang", 0, nodes * GPUS_PER_NODE, RUN_S)]


FULL = (
    Burst("demo-1", "the demo's 1 GPU, us-west-2 short of V100 and A100", _wave(0), short=True),
    Burst("demo-60", "the demo's 60 GPUs, us-west-2 short of V100 and A100", _wave(1), short=True),
    Burst("demo-320", "the demo's 320 GPUs, us-west-2 short of V100 and A100", _wave(2), short=True),
    Burst("burst-2000", "2,000 single-GPU pods at once", _singles(2000)),
    Burst("gang-16x8", "one gang of 16 pods x 8 GPUs", _gang(16)),
    Burst(
        "delete-2s", "the demo's 60 GPUs, each pod deleted 2 s after creation", _wave(1), delete_after_s=2.0
    ),
)
SMALL = (
    Burst("demo-60", "the demo's 60 GPUs, us-west-2 short of V100 and A100", _wave(1), short=True),
    Burst("gang-4x8", "one gang of 4 pods x 8 GPUs", _gang(4)),
    Burst(
        "delete-2s", "the demo's 60 GPUs, each pod deleted 2 s after creation", _wave(1), delete_after_s=2.0
    ),
)


def bursts(small: bool = False, only: list[str] | None = None) -> list[Burst]:
    chosen = list(SMALL if small else FULL)
    if only:
        known = {b.name for b in chosen}
        unknown = [n for n in only if n not in known]
        if unknown:
            raise ValueError(f"--scenario {', '.join(unknown)}: unknown; known: {', '.join(sorted(known))}")
        chosen = [b for b in chosen if b.name in only]
    return chosen
