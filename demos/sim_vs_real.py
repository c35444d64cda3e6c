"""The simulator against the real local stack on `make demo`'s bursts (issue 33: the simulator keeps its virtual
clock for replays of weeks, and is checked against the real thing on a shared scenario).

What agrees and what does not (measured in CI, issue 33): the nodes bought agree (58 real, 64 simulated: the
simulator refills the spec's warm pools as pods take them). The waits do not: on the real stack every wall second
of kube-scheduler, the gang scheduler, kwok and the watches counts 60 model seconds at the demo's compression, and
under CI's load the 60-GPU and 320-GPU bursts took 26 s and 16 s of wall clock (1,578 and 978 model seconds)
where the simulator's virtual clock gives 350 s. So ``nodes_agree`` is asserted; the waits are printed beside each
other with the tolerance they miss, and stay a finding until the demo runs the real stack uncompressed (or the
model learns the real stack's own latencies).

The demo runs the real ``autoscaler run`` (its default ``--spare-gpus 0``) against the embedded AWS and the real
control plane with kwok nodes, 60 times the wall clock; the simulator replays the same bursts, the same capacity
limits and the same node lifecycle on its virtual clock under ``batch-lean`` (ours with ``spare_gpus`` 0). They
agree when the nodes bought are within ``NODES_TOLERANCE`` of each other and each burst's time from submission to
every pod running is within ``WAIT_TOLERANCE`` (or ``WAIT_FLOOR_S``, whichever is larger: one second of wall
clock is a model minute, and a loaded machine adds seconds)."""

from __future__ import annotations

from dataclasses import dataclass

from simulator.metrics import burst_to_running_s
from simulator.scenarios import demo_scenario
from simulator.simulate import run_policy

POLICY = "batch-lean"
NODES_TOLERANCE = 0.15
WAIT_TOLERANCE = 0.30
WAIT_FLOOR_S = 120.0  # model seconds: two seconds of the demo's wall clock


@dataclass
class Comparison:
    nodes_real: int
    nodes_sim: int
    waits_real: list[float]  # model seconds per burst
    waits_sim: list[float | None]
    problems: list[str]

    @property
    def agrees(self) -> bool:
        return not self.problems

    @property
    def nodes_agree(self) -> bool:
        return not any(p.startswith("nodes bought") for p in self.problems)

    def lines(self) -> list[str]:
        waits = ", ".join(
            f"{r:.0f} s real / {'never' if s is None else f'{s:.0f} s'} simulated"
            for r, s in zip(self.waits_real, self.waits_sim, strict=True)
        )
        head = (
            f"the simulator on the same bursts ({POLICY}, virtual clock): {self.nodes_sim} nodes bought "
            f"(real: {self.nodes_real}); each burst to every pod running: {waits}"
        )
        tol = f"nodes within {NODES_TOLERANCE:.0%}, waits within {WAIT_TOLERANCE:.0%} or {WAIT_FLOOR_S:.0f} s"
        if self.agrees:
            return [head, f"simulator and real stack agree ({tol})"]
        return [head, f"simulator and real stack DISAGREE ({tol}):", *(f"  {p}" for p in self.problems)]


def compare(
    nodes_real: int, waits_real: list[float], nodes_sim: int, waits_sim: list[float | None]
) -> Comparison:
    problems = []
    if abs(nodes_sim - nodes_real) > NODES_TOLERANCE * max(nodes_real, 1):
        problems.append(f"nodes bought: simulated {nodes_sim}, real {nodes_real}")
    for i, (r, s) in enumerate(zip(waits_real, waits_sim, strict=True), 1):
        if s is None:
            problems.append(f"burst {i}: never all running in the simulator, {r:.0f} s on the real stack")
        elif abs(s - r) > max(WAIT_FLOOR_S, WAIT_TOLERANCE * r):
            problems.append(f"burst {i}: {s:.0f} s simulated, {r:.0f} s real")
    return Comparison(nodes_real, nodes_sim, list(waits_real), list(waits_sim), problems)


def check(spec, nodes_real: int, waits_real: list[float]) -> Comparison:
    """``waits_real``: each burst's time to every pod running on the real stack, in model seconds."""
    scenario = demo_scenario(spec)
    record = run_policy(scenario, spec, POLICY)
    waits_sim = [burst_to_running_s(record, b) for b in scenario.bursts]
    return compare(nodes_real, waits_real, record.nodes_bought, waits_sim)
