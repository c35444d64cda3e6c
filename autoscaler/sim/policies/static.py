"""``static``: a fixed cluster sized at the workload's peak, what a lab buys when it does not autoscale.

At its first loop it sets the groups' desired sizes once to hold the trace's peak GPU demand (every job running
from its submission; :func:`autoscaler.sim.workload.peak_gpu_demand`) in nodes of the preferred groups that
carry the most GPUs per node, filling each to its max in preference order (spill-over order, then priority).
It never scales after that; the cloud keeps retrying any launch that failed.
"""

from __future__ import annotations

import math

from autoscaler.sim.policies.base import Policy
from autoscaler.sim.workload import peak_gpu_demand


class StaticPolicy(Policy):
    name = "static"

    def __init__(self, ctx, peak_gpus: int | None = None):
        super().__init__(ctx)
        self.peak_gpus = peak_gpu_demand(ctx.jobs) if peak_gpus is None else peak_gpus
        self.done = False

    def sizes(self) -> dict[str, int]:
        """Desired size per group: the peak in the largest GPU nodes, groups filled in preference order."""
        groups = self.ctx.gpu_groups()
        largest = max(g.gpus for g in groups)
        need = math.ceil(self.peak_gpus / largest)
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
