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
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clusterspec.errors import UserError
from clusterspec.loader import load_spec, spec_from_data
from clusterspec.scheduler import PROFILES
from clusterspec.spec import Cluster as Spec
from simulator.bounds import lower_bound
from simulator.metrics import RunRecord, find_bursts, summarize
from simulator.policies import POLICIES, make_policy
from simulator.runner import Run, Scenario
from simulator.scenarios import SCENARIOS, burst_scenario, churn_scenario, demo_scenario, trace_scenario
from simulator.traces import resolve_trace
from simulator.waits import CAUSE_WORDS, PARTS

# Every report: each policy under the deployed scheduler profile, and ours under the default kube-scheduler too
# (what the profile buys); cluster-autoscaler as a three-region lab runs it (one per region, or one in the primary
# region), and once over every region (no real deployment: an idealised bound), each with its defaults and with
# the jobs protected. ``name@default`` runs a policy under the default profile.
DEFAULT_POLICIES = (
    "batch,batch-lean,batch@default,ca-regional,ca-regional-protected,ca-primary,ca-primary-protected,ca-ideal,"
    "ca-ideal-protected,target-tracking,static-peak,static-p95"
)

# Seconds between two progress lines when stderr is not a terminal (a log, a pipe, CI); the environment variable
# overrides it (tests, or a quieter log).
PROGRESS_EVERY_S = 10.0
PROGRESS_ENV = "AUTOSCALER_SIM_PROGRESS_S"

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
    ("pods_never_ran", "pods never ran"),
    ("nodes_bought", "nodes bought"),
    ("api_calls", "API calls"),
]
# The columns a narrow terminal shows first, in the first table (the rest follow in as many tables as needed).
KEY = [
    "wait_p50_s",
    "wait_p95_s",
    "wait_p99_s",
    "cost_usd",
    "cost_over_bound",
    "jobs_killed",
    "jobs_finished",
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
    """One policy in this or a worker process; reports ``(policy, simulated s, events)`` on ``queue`` every
    0.5% of the span or half a second of wall time, whichever comes first."""
    started = time.process_time()
    step = max(j.submit_s + j.duration_s for j in scenario.jobs) / 200
    last = [-step, time.monotonic()]
    events = [0]

    def tick(t: float) -> None:
        events[0] += 1
        now = time.monotonic()
        if t - last[0] >= step or now - last[1] >= 0.5:
            last[0], last[1] = t, now
            queue.put((policy, t, events[0]))

    record = run_policy(scenario, spec, policy, tick)
    queue.put((policy, record.end_s, events[0]))
    return record, time.process_time() - started


def _duration(seconds: float) -> str:
    """Simulated time for a progress line: ``3.2 h`` or ``4.50 d``."""
    return f"{seconds / 3600:.1f} h" if seconds < 2 * 86400 else f"{seconds / 86400:.2f} d"


class _Lines:
    """Progress as one line every ``every`` wall seconds (stderr not a terminal): the policies running, the
    simulated time each reached over the span, the events each processed, and how many policies are done."""

    def __init__(self, console: Console, policies: list[str], span: float, every: float) -> None:
        self.console, self.policies, self.span, self.every = console, policies, span, every
        self.started = time.monotonic()
        self.last = self.started
        self.state: dict[str, tuple[float, int]] = {}
        self.done: set[str] = set()

    def update(self, name: str, t: float, events: int) -> None:
        self.state[name] = (t, events)
        self.tick()

    def finish(self, name: str) -> None:
        self.done.add(name)
        t, events = self.state.get(name, (self.span, 0))
        self._print(f"{label(name)} done ({events:,} events, {_duration(t)} simulated)")

    def tick(self) -> None:
        if time.monotonic() - self.last < self.every:
            return
        running = [n for n in self.policies if n in self.state and n not in self.done]
        parts = [
            f"{label(n)} {_duration(self.state[n][0])} of {_duration(self.span)} "
            f"({self.state[n][0] / self.span:.0%}, {self.state[n][1]:,} events)"
            for n in running
        ]
        self._print(f"{'; '.join(parts) or 'starting'}; {len(self.done)}/{len(self.policies)} policies done")

    def _print(self, text: str) -> None:
        self.last = time.monotonic()
        elapsed = self.last - self.started
        self.console.print(
            f"simulate [{elapsed:,.0f} s] {text}", markup=False, highlight=False, soft_wrap=True
        )


def simulate(
    scenario: Scenario,
    spec: Spec,
    policies: list[str],
    console: Console | None = None,
    workers: int | None = None,
    progress_every: float = PROGRESS_EVERY_S,
) -> tuple[list[RunRecord], dict[str, dict]]:
    """Every policy over the scenario, up to ``workers`` at once in separate processes (default: one per core,
    at most 2); the records in the order asked and each policy's figures. Progress goes to ``console``: a live
    bar per policy on a terminal, otherwise one line every ``progress_every`` seconds and one per policy done."""
    console = console or Console(stderr=True)
    bursts = scenario.bursts if scenario.bursts is not None else find_bursts(scenario.jobs)
    span = max(j.submit_s + j.duration_s for j in scenario.jobs)
    workers = workers or min(2, os.cpu_count() or 1, len(policies))
    results: dict[str, tuple[RunRecord, float]] = {}
    lines = None if console.is_terminal else _Lines(console, policies, span, progress_every)
    with Progress(
        TextColumn("{task.description:>8}"),
        BarColumn(),
        TextColumn("{task.fields[t]}"),
        TimeElapsedColumn(),
        console=console,
        disable=lines is not None,
    ) as bar:
        tasks = {name: bar.add_task(label(name), total=span, t="waiting") for name in policies}

        def show(name: str, t: float, events: int) -> None:
            bar.update(tasks[name], completed=min(t, span), t=f"day {t / 86400:5.2f}, {events:,} events")
            if lines:
                lines.update(name, t, events)

        def finished(name: str) -> None:
            bar.update(tasks[name], completed=span, t="done")
            if lines:
                lines.finish(name)

        if workers <= 1:
            for name in policies:
                results[name] = _worker(scenario, spec, name, _Direct(show))
                finished(name)
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
                    if lines:
                        lines.tick()  # a line on time even while no worker reports (e.g. spawning)
                    for f in done:
                        name = futures[f]
                        results[name] = f.result()
                        finished(name)
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
    """The scenario's lower bound on cost (``simulator/bounds.py``), jobs split into pods as the runs split
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

    def put(self, item: tuple[str, float, int]) -> None:
        self.show(*item)


def _table(title: str, figures: dict[str, dict], keys: list[str]) -> Table:
    names = dict(SHOWN)
    table = Table(title=title)
    table.add_column("policy", no_wrap=True)
    for k in keys:
        table.add_column(names[k], justify="right")
    for name, f in figures.items():
        table.add_row(name, *("-" if f.get(k) is None else f"{f[k]:,}" for k in keys))
    return table


def _fits(console: Console, table: Table, width: int) -> bool:
    """The table at its natural width (no cell wrapped or cut) fits ``width`` columns."""
    natural = Measurement.get(console, console.options.update(width=10_000), table).maximum
    return natural <= width


def figures_tables(title: str, figures: dict[str, dict], console: Console) -> list[Table]:
    """The figures as one wide table when the console is wide enough, otherwise as narrow tables: the key
    figures (p99 wait, cost, cost over the bound, killed, finished) first, then the rest, as many columns per
    table as fit, so that no cell is cut at 80 columns."""
    width = console.width
    wide = _table(title, figures, [k for k, _ in SHOWN])
    if _fits(console, wide, width):
        return [wide]
    order = KEY + [k for k, _ in SHOWN if k not in KEY]
    groups: list[list[str]] = [[]]
    for k in order:
        if groups[-1] and not _fits(console, _table(title, figures, groups[-1] + [k]), width):
            groups.append([])
        groups[-1].append(k)
    return [
        _table(
            f"{title}: key figures" if i == 0 else f"{title}: more figures ({i + 1}/{len(groups)})",
            figures,
            g,
        )
        for i, g in enumerate(groups)
    ]


def tail_lines(figures: dict[str, dict]) -> list[str]:
    """The tail-causes section: per policy, the jobs that waited at least its p95 and its p99, by cause (the
    node they waited for: bought after submission, already launching, running), node type and size, and the
    mean of each part of their wait (simulator/waits.py)."""
    lines = [
        "Tail causes: the jobs that waited at least the p95 (p99), where their wait went (docs/simulator.md)"
    ]
    for name, f in figures.items():
        b = f.get("wait_breakdown")
        if not b:
            continue
        for q in ("p95", "p99"):
            t = b[f"tail_{q}"]
            if not t["jobs"]:
                lines.append(f"  {name} {q}: no job waited")
                continue
            causes = ", ".join(f"{CAUSE_WORDS[c]} {n}" for c, n in t["by_cause"].items())
            types = ", ".join(f"{k} {n}" for k, n in list(t["by_instance_type"].items())[:3])
            sizes = ", ".join(f"{k} {n}" for k, n in t["by_size"].items())
            parts = ", ".join(f"{p} {t['mean_s'][p]:,.0f}" for p in PARTS)
            lines.append(
                f"  {name} {q}: {t['jobs']:,} jobs >= {t['threshold_s']:,.0f} s: {causes}; on {types}; {sizes}; "
                f"mean s: {parts}"
            )
    return lines


def bound_line(bound: dict) -> str:
    return (
        f"lower bound: ${bound['cost_usd']:,.0f} ({bound['useful_gpu_hours']:,.0f} useful GPU-hours at the cheapest "
        f"eligible price ${bound['gpu_cost_usd']:,.0f}, CPU nodes at their minimum ${bound['cpu_floor_usd']:,.0f})"
    )


def _progress_every_from_env() -> float:
    text = os.environ.get(PROGRESS_ENV)
    if not text:
        return PROGRESS_EVERY_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise UserError(f"{PROGRESS_ENV}: {text!r} is not a number of seconds >= 0 (e.g. 10)")
    return value


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
    progress_every: float | None = None,
) -> dict:
    """The ``invoke simulate`` task: returns the JSON document it writes. ``window``: only the jobs submitted in
    the trace's first ``window`` hours (a short run); ``without_gpu``: comma-separated GPU models
    (``research.cluster/gpu-model`` labels, e.g. ``t4``) whose node groups are left out of the spec;
    ``progress_every``: seconds between progress lines when stderr is not a terminal (default: the environment's
    ``AUTOSCALER_SIM_PROGRESS_S``, else 10)."""
    names = parse_policies(policies, scheduler)
    cluster = load_spec(spec)
    if without_gpu:
        cluster = without_gpus(cluster, [m.strip() for m in without_gpu.split(",") if m.strip()])
    if trace and scenario:
        raise UserError("give either --trace or --scenario, not both")
    if scenario:
        if scenario not in SCENARIOS:
            raise UserError(f"--scenario: unknown {scenario!r}; choose from {', '.join(SCENARIOS)}")
        sc = (
            burst_scenario(cluster)
            if scenario == "burst"
            else demo_scenario(cluster)
            if scenario == "demo"
            else churn_scenario()
        )
    else:
        sc = trace_scenario(resolve_trace(trace))
    if window is not None:
        if window <= 0:
            raise UserError("--window must be a positive number of hours")
        jobs = [j for j in sc.jobs if j.submit_s < window * 3600]
        if not jobs:
            raise UserError(f"--window {window:g}: no job is submitted in the trace's first {window:g} hours")
        sc = Scenario(sc.name, f"{sc.description}, first {window:g} h ({len(jobs):,} jobs)", jobs)
    if progress_every is None:
        progress_every = _progress_every_from_env()
    # Piped without COLUMNS: 160 columns (a log reads the wide table); a terminal or COLUMNS: its width.
    console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)
    console.print(f"simulating {sc.description} under {', '.join(names)}")
    if workers is not None and workers < 1:
        raise UserError("--workers must be at least 1")
    started = time.perf_counter()
    records, figures = simulate(sc, cluster, names, Console(stderr=True), workers, progress_every)
    wall = time.perf_counter() - started
    bound = bound_of(sc, cluster)
    for table in figures_tables(sc.name, figures, console):
        console.print(table)
    console.print(bound_line(bound))
    for line in tail_lines(figures):
        console.print(line, markup=False, highlight=False)
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
        from simulator.report import write_report  # matplotlib only when a report is asked for

        path = write_report(report, f"Simulation: {sc.name}", sc.description, records, figures)
        console.print(f"report: {path}")
    return doc
