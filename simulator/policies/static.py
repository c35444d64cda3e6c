"""``static-peak`` and ``static-p95``: a fixed cluster, what a lab buys when it does not autoscale.

At its first loop it sets the groups' desired sizes once, in nodes of the preferred groups that carry the most
GPUs per node, filling each to its max in preference order (spill-over order, then priority), to hold:

- ``static-peak``: the trace's peak GPU demand (every job running from its submission;
  :func:`simulator.workload.peak_gpu_demand`): nobody waits for capacity;
- ``static-p95``: the 95th percentile over time of that demand (:func:`demand_percentile`): 5% of the time the
  demand is above it and jobs queue (the scheduler starts them as room frees, oldest first).

It never scales after that; the cloud keeps retrying any launch that failed. A fixed cluster is what a one-year
commitment buys, so its figures carry a second price with ``COMMITMENT_DISCOUNT`` off.
"""

from __future__ import annotations

import math

import numpy as np

from simulator.policies.base import Policy
from simulator.traces import Job
from simulator.workload import peak_gpu_demand

# A one-year commitment without upfront payment (EC2 Instance Savings Plan or Standard Reserved Instance, 1 year,
# No Upfront), taken as 35% off on-demand: the upper end of what AWS gives for that term and payment ("typically
# about 30%" for No Upfront, Amazon EC2 Reserved Instances pricing page), in the baseline's favour. The exact
# rate for p3.16xlarge in us-west-2 is on the Savings Plans pricing page (aws.amazon.com/savingsplans/compute-pricing),
# which this machine cannot reach: check it before quoting a figure.
COMMITMENT_DISCOUNT = 0.35


def demand_percentile(jobs: list[Job], q: float) -> float:
    """The q-th percentile over time of the GPU demand if every job ran from its submission, from the first
    submission to the last end (time-weighted)."""
    events = sorted(
        [(j.submit_s, j.gpus) for j in jobs] + [(j.submit_s + j.duration_s, -j.gpus) for j in jobs]
    )
    levels, weights = [], []
    level = 0
    for (t, d), nxt in zip(events, [*events[1:], None], strict=True):
        level += d
        if nxt is not None and nxt[0] > t:
            levels.append(level)
            weights.append(nxt[0] - t)
    order = np.argsort(levels)
    cum = np.cumsum(np.asarray(weights, dtype=float)[order])
    idx = int(np.searchsorted(cum, q / 100 * cum[-1]))
    return float(np.asarray(levels)[order][min(idx, len(levels) - 1)])


class StaticPolicy(Policy):
    name = "static-peak"
    api_mode = "static"
    commitment_discount = COMMITMENT_DISCOUNT

    def __init__(self, ctx, gpus: int | None = None):
        super().__init__(ctx)
        self.gpus = self.size(ctx.jobs) if gpus is None else gpus
        self.done = False

    def size(self, jobs: list[Job]) -> int:
        return peak_gpu_demand(jobs)

    def sizes(self) -> dict[str, int]:
        """Desired size per group: the GPUs in the largest GPU nodes, groups filled in preference order."""
        groups = self.ctx.gpu_groups()
        largest = max(g.gpus for g in groups)
        need = math.ceil(self.gpus / largest)
        out = {}
        for g in (g for g in groups if g.gpus == largest):
            take = min(need, g.max)
            if take:
                out[g.name] = take
            need -= take
            if need == 0:
                break
        return out

    def run_once(self) -> None:
        if self.done:
            return
        for group, size in self.sizes().items():
            self.ctx.cloud.set_desired(group, size)
        self.done = True


class StaticP95Policy(StaticPolicy):
    name = "static-p95"

    def size(self, jobs: list[Job]) -> int:
        return math.ceil(demand_percentile(jobs, 95))
