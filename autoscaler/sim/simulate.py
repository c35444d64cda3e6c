"""``invoke simulate``: run a scenario under each policy, print the figures, write ``--json`` and ``--report``."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from autoscaler.sim.bounds import lower_bound
from autoscaler.sim.metrics import RunRecord, find_bursts, summarize
from autoscaler.sim.policies import POLICIES, make_policy
from autoscaler.sim.runner import Run, Scenario
from autoscaler.sim.scenarios import SCENARIOS, burst_scenario, trace_scenario
from autoscaler.sim.traces import resolve_trace
from provision.errors import UserError
from provision.loader import load_spec, spec_from_data
from provision.scheduler import PROFILES
from provision.spec import Cluster as Spec

# Every report: each policy under the deployed scheduler profile, and ours under the default kube-scheduler too
# (what the profile buys). ``name@default`` runs a policy under the default profile.
DEFAULT_POLICIES = "batch,batch@default,ca-like,ca-like-protected,target-tracking,static-peak,static-p95"

SHOWN = [
    ("wait_p50_s", "wait p50 s"),
    ("wait_p95_s", "p95 s"),
    ("wait_p99_s", "p99 s"),
    ("burst_to_running_max_s", "burst->running s"),
    ("loops_to_request_burst_max", "loops/burst"),
    ("gpu_hours_provisioned", "GPU-h prov"),
    ("gpu_hours_used", "GPU-h used"),
    ("cost_usd", "cost $"),
    ("cost_committed_usd", "1-yr commit $"),
    ("cost_over_bound", "x bound"),
    ("jobs_killed", "killed"),
    ("jobs_finished", "finished"),
    ("api_calls", "API calls"),
]


def parse_policies(text: str, scheduler: str = "bin-packing") -> list[str]:
    """The runs asked for, as ``policy@scheduler`` labels (``--scheduler`` for names without one)."""
    if scheduler not in PROFILES:
        raise UserError(f"--scheduler: unknown {scheduler!r}; choose from {', '.join(PROFILES)}")
    names = [p.strip() for p in text.split(",") if p.strip()]
    out, unknown = [], []
    for name in names:
        policy, _, profile = name.partition("@")
        if policy not in POLICIES or (profile and profile not in PROFILES):
            unknown.append(name)
        out.append(f"{policy}@{profile or scheduler}")
    if unknown or not names:
        raise UserError(
            f"--policies: unknown {', '.join(unknown) or '(none given)'}; choose from {','.join(POLICIES)}, "
            f"each optionally @{'|@'.join(PROFILES)}"
        )
    return out


def label(run: str) -> str:
    """``batch@bin-packing`` -> ``batch``; a run under the default scheduler keeps its suffix."""
    policy, _, profile = run.partition("@")
    return policy if profile == "bin-packing" else run


class _Counting(logging.Handler):
    """Counts the autoscaler's warnings during a run instead of printing them over the progress bar."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.first is None:
            error = getattr(record, "error", None)
            self.first = record.getMessage() + (f" ({error})" if error else "")


def run_policy(scenario: Scenario, spec: Spec, policy: str, progress=None) -> RunRecord:
    """One policy over the scenario, with the autoscaler's warnings counted rather than printed."""
    logger = logging.getLogger("autoscaler")
    handler = _Counting()
    logger.addHandler(handler)
    old_propagate, logger.propagate = logger.propagate, False
    name, _, profile = policy.partition("@")
    try:
        run = Run(
            scenario, spec, label(policy), lambda ctx, r: make_policy(name, ctx, r), profile or "bin-packing"
        )
        record = run.run(progress)
    finally:
        logger.removeHandler(handler)
        logger.propagate = old_propagate
    record.warnings = handler.count
    record.first_warning = handler.first
    return record


def _worker(scenario: Scenario, spec: Spec, policy: str, queue) -> tuple[RunRecord, float]:
    started = time.process_time()
    step = max(j.submit_s + j.duration_s for j in scenario.jobs) / 200
    last = [-step]

    def tick(t: float) -> None:
        if t - last[0] >= step:
            last[0] = t
            queue.put((policy, t))

    record = run_policy(scenario, spec, policy, tick)
    return record, time.process_time() - started


def simulate(
    scenario: Scenario,
    spec: Spec,
    policies: list[str],
    console: Console | None = None,
    workers: int | None = None,
) -> tuple[list[RunRecord], dict[str, dict]]:
    """Every policy over the scenario, up to ``workers`` at once in separate processes (default: one per core,
    at most 2); the records in the order asked and each policy's figures."""
    console = console or Console(stderr=True)
    bursts = scenario.bursts if scenario.bursts is not None else find_bursts(scenario.jobs)
    span = max(j.submit_s + j.duration_s for j in scenario.jobs)
    workers = workers or min(2, os.cpu_count() or 1, len(policies))
    results: dict[str, tuple[RunRecord, float]] = {}
    with Progress(
        TextColumn("{task.description:>8}"),
        BarColumn(),
        TextColumn("{task.fields[t]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    ) as bar:
        tasks = {name: bar.add_task(label(name), total=span, t="waiting") for name in policies}

        def show(name: str, t: float) -> None:
            bar.update(tasks[name], completed=min(t, span), t=f"day {t / 86400:5.2f}")

        if workers <= 1:
            for name in policies:
                queue = _Direct(show)
                results[name] = _worker(scenario, spec, name, queue)
                bar.update(tasks[name], completed=span, t="done")
        else:
            ctx = mp.get_context("spawn")
            with ctx.Manager() as manager, ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                queue = manager.Queue()
                futures = {pool.submit(_worker, scenario, spec, name, queue): name for name in policies}
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    while not queue.empty():
                        show(*queue.get())
                    for f in done:
                        name = futures[f]
                        results[name] = f.result()
                        bar.update(tasks[name], completed=span, t="done")
    records, figures = [], {}
    bound = bound_of(scenario, spec)
    for name in policies:
        record, cpu = results[name]
        records.append(record)
        f = figures[label(name)] = summarize(record, bursts)
        f["cpu_seconds"] = round(cpu, 1)
        f["cost_over_bound"] = round(f["cost_usd"] / bound["cost_usd"], 2) if bound["cost_usd"] else None
        if record.warnings:
            console.print(
                f"[yellow]{name}: the autoscaler logged {record.warnings} warning(s); first: {record.first_warning}"
            )
    return records, figures


def without_gpus(cluster: Spec, models: list[str]) -> Spec:
    """The spec without the node groups of these GPU models (a sensitivity run: e.g. no T4, so that no policy
    gains from the trace's durations being the same on a T4 as on a V100)."""
    data = cluster.model_dump(mode="json")
    found = set()
    for region in data["regions"]:
        kept = []
        for g in region["node_groups"]:
            model = (g.get("labels") or {}).get("research.cluster/gpu-model")
            if model in models:
                found.add(model)
            else:
                kept.append(g)
        region["node_groups"] = kept
    missing = [m for m in models if m not in found]
    if missing:
        raise UserError(f"--without-gpu: no node group has research.cluster/gpu-model {', '.join(missing)}")
    return spec_from_data(data, f"{cluster.name} without {', '.join(models)}")


def bound_of(scenario: Scenario, spec: Spec) -> dict:
    """The scenario's lower bound on cost (``autoscaler/sim/bounds.py``), jobs split into pods as the runs split
    them (``Run.gpus_per_node``: the most GPUs of a node the workload may use)."""
    gpn = max(
        g.gpus
        for r in spec.regions
        for g in r.node_groups
        if g.gpus > 0 and all(t.key == "nvidia.com/gpu" for t in g.taints)
    )
    return lower_bound(scenario.jobs, spec, gpn)


class _Direct:
    """A queue stand-in for runs in this process: progress goes straight to the bar."""

    def __init__(self, show) -> None:
        self.show = show

    def put(self, item: tuple[str, float]) -> None:
        self.show(*item)


def figures_table(title: str, figures: dict[str, dict]) -> Table:
    table = Table(title=title)
    table.add_column("policy")
    for _, label in SHOWN:
        table.add_column(label, justify="right")
    for name, f in figures.items():
        table.add_row(name, *("-" if f.get(k) is None else f"{f[k]:,}" for k, _ in SHOWN))
    return table


def bound_line(bound: dict) -> str:
    return (
        f"lower bound: ${bound['cost_usd']:,.0f} ({bound['useful_gpu_hours']:,.0f} useful GPU-hours at the cheapest "
        f"eligible price ${bound['gpu_cost_usd']:,.0f}, CPU nodes at their minimum ${bound['cpu_floor_usd']:,.0f})"
    )


def main(
    trace: str | None = None,
    scenario: str | None = None,
    policies: str = DEFAULT_POLICIES,
    spec: str | None = None,
    json_out: str | None = None,
    report: str | None = None,
    workers: int | None = None,
    scheduler: str = "bin-packing",
    window: float | None = None,
    without_gpu: str | None = None,
) -> dict:
    """The ``invoke simulate`` task: returns the JSON document it writes. ``window``: only the jobs submitted in
    the trace's first ``window`` hours (a short run); ``without_gpu``: comma-separated GPU models
    (``research.cluster/gpu-model`` labels, e.g. ``t4``) whose node groups are left out of the spec."""
    names = parse_policies(policies, scheduler)
    cluster = load_spec(spec)
    if without_gpu:
        cluster = without_gpus(cluster, [m.strip() for m in without_gpu.split(",") if m.strip()])
    if trace and scenario:
        raise UserError("give either --trace or --scenario, not both")
    if scenario:
        if scenario not in SCENARIOS:
            raise UserError(f"--scenario: unknown {scenario!r}; choose from {', '.join(SCENARIOS)}")
        sc = burst_scenario(cluster)
    else:
        sc = trace_scenario(resolve_trace(trace))
    if window is not None:
        if window <= 0:
            raise UserError("--window must be a positive number of hours")
        jobs = [j for j in sc.jobs if j.submit_s < window * 3600]
        if not jobs:
            raise UserError(f"--window {window:g}: no job is submitted in the trace's first {window:g} hours")
        sc = Scenario(sc.name, f"{sc.description}, first {window:g} h ({len(jobs):,} jobs)", jobs)
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(f"simulating {sc.description} under {', '.join(names)}")
    if workers is not None and workers < 1:
        raise UserError("--workers must be at least 1")
    started = time.perf_counter()
    records, figures = simulate(sc, cluster, names, Console(stderr=True), workers)
    wall = time.perf_counter() - started
    bound = bound_of(sc, cluster)
    console.print(figures_table(sc.name, figures))
    console.print(bound_line(bound))
    console.print(
        f"wall time {wall:,.0f} s, {sum(f['cpu_seconds'] for f in figures.values()):,.0f} CPU-seconds"
    )
    doc = {
        "scenario": sc.name,
        "without_gpu": without_gpu or None,
        "description": sc.description,
        "lower_bound": bound,
        "wall_seconds": round(wall, 1),
        "policies": figures,
    }
    if json_out:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(json.dumps(doc, indent=2) + "\n")
        console.print(f"figures: {json_out}")
    if report:
        from autoscaler.sim.report import write_report  # matplotlib only when a report is asked for

        path = write_report(report, f"Simulation: {sc.name}", sc.description, records, figures)
        console.print(f"report: {path}")
    return doc
