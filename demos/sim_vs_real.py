"""The simulator against the real local stack on `make demo`'s bursts (issue 33: the simulator keeps its virtual
clock for replays of weeks, and is checked against the real thing on a shared scenario).

The demo runs the real ``autoscaler run`` (its default ``--spare-gpus 0``) against the embedded AWS and the real
control plane with kwok nodes, its model 60 times the wall clock (``invoke demo --compression N``: N times); the
simulator replays the same bursts, the same capacity
limits and the same node lifecycle on its virtual clock under ``batch-lean`` (ours with ``spare_gpus`` 0), with
the autoscaler's own durations as the demo runs them (``as_run``: it reads the wall clock, so its 2-s scan, its
1-s/10-s batch window and its 60-s failure back-off are 120, 60/600 and 3,600 model seconds at 60x).

Held to the tolerance (``make e2e`` fails beyond it): the nodes bought, within ``NODES_TOLERANCE`` (15%: the
simulator refills the spec's warm pools as pods take them, the real run's count varies with which pods land on
nodes bought for others), and each burst's time from its last pod to the autoscaler's pass that planned for it,
within ``WAIT_TOLERANCE`` (30%) or ``WAIT_FLOOR_S`` (120 model seconds: two wall seconds, the scan interval's
granularity at 60x, and what a loaded 2-core machine adds to a pass), whichever is larger.

Printed beside the simulator's, not held to it: each burst's time to every pod running. Measured per phase
(demos/phases.py, phases.json in the demo's folder; issue 33, 2026-12-07, 2 loaded cores), after the fixes it led
to (kube-scheduler's wall-clock backoff and client rate limits for a compressed stack, the autoscaler's batching
window held open by pending pods' updates and DaemonSet pods, the node agent's serial syncs), the autoscaler's
part agrees (decision, purchase and spill-over, boot delays), and what is left is the stack's node pipeline: a
burst of 44 nodes, each with its taints, five DaemonSet pods, their bindings and kwok's statuses, takes the API
server on this machine 7 to 10 wall seconds from registration to GPUs, 450 to 600 model seconds at 60x where a
cluster of real nodes takes the model's 50 (ready 20 s, device plugin 30 s); and kube-scheduler's queue lets a
later burst's fresh pods, or the new nodes' DaemonSet pods (system-node-critical), go before an earlier burst's
pods that wait in its backoff. So, in two runs after the fixes, the waits agree for the one-GPU burst (312 and
342 s real, 290 s simulated), for the 60-GPU burst in one run of two (1,578 and 732 s real, 680 s simulated) and
not for the 320-GPU one (978 and 696 s real, 380 s simulated): agreeing there needs the demo run less compressed
(each wall second less model time) or a machine whose API server keeps up, not a wider tolerance.

Less compressed (``invoke demo --compression N``; 2026-12-07, 2 cores loaded by two other stacks, load average
12), after kwok's pod-complete jitter was fixed (localcluster/workload.py: every job had completed 5 wall seconds
after it ran, so the sweep reused the experiments' nodes and bought fewer): at 15x the nodes (62 real / 64
simulated), the decisions and the first two bursts agree (272/245 s, 430/410 s) and the sweep does not (612 s real,
335 s simulated): its 33 new nodes take 243 model seconds (16 wall) from registration to GPUs, the model 50
(registered to Ready 84 s, Ready to the device plugin running 100 s, to GPUs 69 s). At 5x the same 15 wall seconds
are 70 to 77 model seconds and everything agrees, in both runs: 62 nodes real / 64 simulated; waits 244/235,
369/350 and 384/350 s, then 242/235, 362/350 and 412/350 s; decisions 5 to 7 s real / 5 s simulated. ``invoke sim-vs-real`` (its ``--compression`` 5 by default; about 5 minutes, not
in ``make e2e``) runs the demo so and holds all of it, waits included: exit status 1 beyond the tolerance."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.loop import BatchWindow
from simulator.metrics import burst_to_running_s
from simulator.policies import make_policy
from simulator.runner import Run
from simulator.scenarios import demo_scenario

POLICY = "batch-lean"
NODES_TOLERANCE = 0.15
WAIT_TOLERANCE = 0.30
WAIT_FLOOR_S = 120.0  # model seconds: two seconds of the demo's wall clock (its scan interval)


@dataclass
class Comparison:
    nodes_real: int
    nodes_sim: int
    waits_real: list[float]  # model seconds per burst
    waits_sim: list[float | None]
    problems: list[str]
    decisions_real: list[float | None] | None = (
        None  # model seconds per burst: to the first scale-up after it
    )
    decisions_sim: list[float | None] | None = None

    @property
    def agrees(self) -> bool:
        return not self.problems

    @property
    def nodes_agree(self) -> bool:
        return not any(p.startswith("nodes bought") for p in self.problems)

    @property
    def decisions_agree(self) -> bool:
        return not any("pass after its last pod" in p for p in self.problems)

    def lines(self) -> list[str]:
        waits = ", ".join(
            f"{r:.0f} s real / {'never' if s is None else f'{s:.0f} s'} simulated"
            for r, s in zip(self.waits_real, self.waits_sim, strict=True)
        )
        head = (
            f"the simulator on the same bursts ({POLICY}, virtual clock): {self.nodes_sim} nodes bought "
            f"(real: {self.nodes_real}); each burst to every pod running: {waits}"
        )
        if self.decisions_real is not None and self.decisions_sim is not None:
            head += "; last pod to the pass that planned for it: " + ", ".join(
                f"{_s(r)} real / {_s(s)} simulated"
                for r, s in zip(self.decisions_real, self.decisions_sim, strict=True)
            )
        tol = f"nodes within {NODES_TOLERANCE:.0%}, waits within {WAIT_TOLERANCE:.0%} or {WAIT_FLOOR_S:.0f} s"
        if self.agrees:
            return [head, f"simulator and real stack agree ({tol})"]
        return [head, f"simulator and real stack DISAGREE ({tol}):", *(f"  {p}" for p in self.problems)]


def _s(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds:.0f} s"


def compare(
    nodes_real: int,
    waits_real: list[float],
    nodes_sim: int,
    waits_sim: list[float | None],
    decisions_real: list[float | None] | None = None,
    decisions_sim: list[float | None] | None = None,
) -> Comparison:
    problems = []
    if abs(nodes_sim - nodes_real) > NODES_TOLERANCE * max(nodes_real, 1):
        problems.append(f"nodes bought: simulated {nodes_sim}, real {nodes_real}")
    for i, (r, s) in enumerate(zip(waits_real, waits_sim, strict=True), 1):
        if s is None:
            problems.append(f"burst {i}: never all running in the simulator, {r:.0f} s on the real stack")
        elif abs(s - r) > max(WAIT_FLOOR_S, WAIT_TOLERANCE * r):
            problems.append(f"burst {i}: {s:.0f} s simulated, {r:.0f} s real")
    for i, (r, s) in enumerate(zip(decisions_real or (), decisions_sim or (), strict=True), 1):
        if r is None or s is None:
            if (r is None) != (s is None):
                problems.append(f"burst {i}: pass after its last pod {_s(s)} simulated, {_s(r)} real")
        elif abs(s - r) > max(WAIT_FLOOR_S, WAIT_TOLERANCE * r):
            problems.append(f"burst {i}: pass after its last pod {s:.0f} s simulated, {r:.0f} s real")
    return Comparison(nodes_real, nodes_sim, list(waits_real), list(waits_sim), problems,
                      decisions_real, decisions_sim)  # fmt: skip


def as_run(spec, compression: float, scan_interval_s: float):
    """The spec and the batch policy as the demo runs the real autoscaler. It reads the wall clock, so each of its
    durations is ``compression`` times longer in model time: its scan interval (``--scan-interval``), its batch
    window (autoscaler.loop.BatchWindow: a pass 0.1 s after a pod that came alone, 1 s after the last of a burst,
    10 s after the first at the latest), its back-off of a group after a failed scaling activity (60 s doubling to 1,800 s: at 60x a group
    that ran out of capacity is not tried again during the demo, where the simulator's 60 model seconds retried
    it every other loop), its idle threshold and its boot timeout."""
    scan = round(scan_interval_s * compression)
    window = BatchWindow(scan_interval_s)
    settings = spec.autoscaler
    scaled = {"scan_interval_s": scan, "idle_threshold_s": round(settings.idle_threshold_s * compression),
              "boot_timeout_s": round(settings.boot_timeout_s * compression)}  # fmt: skip
    spec = spec.model_copy(update={"autoscaler": settings.model_copy(update=scaled)})

    def factory(ctx, run):
        policy = make_policy(POLICY, ctx, run)
        policy.batch_window = (window.idle_s * compression, window.max_wait_s * compression,
                               window.lone_idle_s * compression)  # fmt: skip
        planner = policy.config.planner  # the controller's own (the same object)
        planner.backoff_base_s *= compression
        planner.backoff_max_s *= compression
        return policy

    return spec, factory


def check(spec, nodes_real: int, waits_real: list[float], compression: float, scan_interval_s: float,
          decisions_real: list[float | None] | None = None) -> Comparison:  # fmt: skip
    """``waits_real``: each burst's time to every pod running on the real stack, in model seconds, the demo's
    autoscaler scanning every ``scan_interval_s`` wall seconds with its model ``compression`` times the wall
    clock; ``decisions_real``: each burst's time from its last pod to the autoscaler's pass after it (model
    seconds)."""
    spec, factory = as_run(spec, compression, scan_interval_s)
    scenario = demo_scenario(spec)
    record = Run(scenario, spec, POLICY, factory).run()
    waits_sim = [burst_to_running_s(record, b) for b in scenario.bursts]
    decisions_sim = [to_loop_s(record, b) for b in scenario.bursts] if decisions_real is not None else None
    return compare(nodes_real, waits_real, record.nodes_bought, waits_sim, decisions_real, decisions_sim)


def to_loop_s(record, burst) -> float | None:
    """From a burst's last submission to the policy's first loop at or after it."""
    last = burst.start_s if burst.end_s is None else burst.end_s
    loops = [loop.t for loop in record.loops if loop.t >= last]
    return min(loops) - last if loops else None
