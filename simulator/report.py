"""The simulation report: one self-contained HTML page (plots embedded as PNG) and the figures table.

Plots: GPU demand and capacity over time per policy (capacity stacked by region, so spill-over shows), the
job wait-time CDF of every policy, the jobs killed over time, and cost with GPU-hours provisioned and used.
Each plot has a few sentences saying what it shows and how to read it; curves of different policies differ in
colour, line style and marker, and policies whose curves coincide are named under the plot (one line hides the
other there).
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from simulator.metrics import RunRecord, job_wait_s  # noqa: E402

COLUMNS = [
    ("wait_p50_s", "wait p50 (s)"),
    ("wait_p95_s", "wait p95 (s)"),
    ("wait_p99_s", "wait p99 (s)"),
    ("burst_to_running_max_s", "burst to running, worst (s)"),
    ("loops_to_request_burst_max", "loops to request a burst, worst"),
    ("gpu_hours_provisioned", "GPU-h provisioned"),
    ("gpu_hours_used", "GPU-h used"),
    ("gpu_hours_idle", "GPU-h idle"),
    ("cost_usd", "cost (USD)"),
    ("jobs_killed", "jobs killed"),
    ("jobs_finished", "jobs finished"),
    ("api_calls", "cloud API calls"),
    ("loops", "loops run"),
]
REGION_COLORS = ["#4c72b0", "#55a868", "#c44e52", "#8172b2", "#ccb974", "#64b5cd"]
# One style per policy in the shared plots: colour, line style and marker all differ, so a line drawn over
# another stays visible (dashes show the one below) and a black-and-white print still tells them apart.
# Twelve colours, so that each policy of the default run (eleven) has its own.
LINE_COLORS = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
    "#e377c2", "#17becf", "#000000", "#bcbd22", "#7f7f7f", "#aec7e8",
]  # fmt: skip
LINE_STYLES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 3))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]
# Two wait-time CDFs closer than this (a share of the jobs: 2% of the plot's height) look like one line.
CLOSE = 0.02


def style(i: int) -> dict:
    """Matplotlib keyword arguments for the ``i``-th policy's line."""
    n = len(LINE_COLORS)
    return {
        "color": LINE_COLORS[i % n],
        "ls": LINE_STYLES[i % len(LINE_STYLES)],
        "marker": MARKERS[i % len(MARKERS)],
        "lw": 1.6,
        "ms": 5,
        "markerfacecolor": "none",
        "zorder": 3 + i,
    }


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _steps(record: RunRecord, attr: str) -> tuple[list[float], list[float]]:
    xs = [(s.t) / 3600 for s in record.samples] + [record.end_s / 3600]
    ys = [getattr(s, attr) for s in record.samples]
    return xs, ys + ys[-1:]


def timeline_plot(records: list[RunRecord]) -> str:
    fig, axes = plt.subplots(len(records), 1, figsize=(11, 2.6 * len(records)), sharex=True, squeeze=False)
    for ax, rec in zip(axes[:, 0], records, strict=True):
        if rec.samples:
            xs = [s.t / 3600 for s in rec.samples] + [rec.end_s / 3600]
            if rec.regions and rec.samples[0].capacity_by_region:
                stacks = [[s.capacity_by_region[i] for s in rec.samples] for i in range(len(rec.regions))]
                stacks = [row + row[-1:] for row in stacks]
                ax.stackplot(
                    xs,
                    stacks,
                    labels=[f"capacity {r}" for r in rec.regions],
                    colors=REGION_COLORS[: len(rec.regions)],
                    step="post",
                    alpha=0.45,
                )
            px, py = _steps(rec, "provisioned_gpus")
            ax.step(px, py, where="post", color="black", lw=0.8, ls=":", label="provisioned (booting too)")
            dx, dy = _steps(rec, "demand_gpus")
            ax.step(dx, dy, where="post", color="#dd8452", lw=1.2, label="demand (running + pending)")
        ax.set_title(rec.policy, loc="left", fontsize=10)
        ax.set_ylabel("GPUs")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    # the legend above the first panel, outside the plotting area: it never hides a curve
    axes[0, 0].legend(loc="lower left", bbox_to_anchor=(0, 1.12), fontsize=7, ncol=3, frameon=False)
    axes[-1, 0].set_xlabel("hours since the start of the trace")
    return _png(fig)


def _waits(rec: RunRecord) -> np.ndarray:
    """Every job's wait as drawn in the CDF, sorted."""
    return np.sort(np.asarray([job_wait_s(o, rec.end_s) for o in rec.jobs.values()], dtype=float))


def _cdf_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest vertical gap between two empirical CDFs (Kolmogorov-Smirnov): a share of jobs."""
    if not len(a) or not len(b):
        return 0.0 if len(a) == len(b) else 1.0
    xs = np.concatenate([a, b])
    fa = np.searchsorted(a, xs, side="right") / len(a)
    fb = np.searchsorted(b, xs, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def _apart_from(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    """Where two CDFs first differ by more than ``CLOSE``: (the wait there, the share of jobs both curves have
    reached just before it); None if they never do."""
    xs = np.unique(np.concatenate([a, b]))
    fa = np.searchsorted(a, xs, side="right") / len(a)
    fb = np.searchsorted(b, xs, side="right") / len(b)
    apart = np.nonzero(np.abs(fa - fb) > CLOSE + 1e-9)[0]
    if not len(apart):
        return None
    i = int(apart[0])
    return float(xs[i]), float(min(fa[i - 1], fb[i - 1])) if i else 0.0


def _groups(names: list[str], same) -> list[list[str]]:
    """Policies whose curves coincide (``same(a, b)``), in groups of two or more, in the order given."""
    groups: list[list[str]] = []
    for name in names:
        for g in groups:
            if same(g[0], name):
                g.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def wait_overlaps(records: list[RunRecord]) -> list[str]:
    """Sentences naming the policies whose wait-time curves are identical or within ``CLOSE`` of each other."""
    waits = {r.policy: _waits(r) for r in records}

    def identical(a: str, b: str) -> bool:
        return len(waits[a]) == len(waits[b]) and bool(np.allclose(waits[a], waits[b], rtol=0, atol=1.0))

    def close(a: str, b: str) -> bool:
        return _cdf_distance(waits[a], waits[b]) <= CLOSE + 1e-9

    names = [r.policy for r in records]
    out = [
        f"{_and(g)}: identical curves (the same wait, to the second, for every job); the lines lie on top of each "
        "other, told apart by their dashes and markers."
        for g in _groups(names, identical)
    ]
    seen = {n for g in _groups(names, identical) for n in g[1:]}
    out += [
        f"{_and(g)}: curves within {CLOSE:.0%} of the jobs of each other everywhere, so they overlap in the plot."
        for g in _groups(
            [n for n in names if n not in seen], lambda a, b: close(a, b) and not identical(a, b)
        )
    ]
    for i, a in enumerate(names):  # curves that coincide for most jobs and part only in the tail
        for b in names[i + 1 :]:
            apart = _apart_from(waits[a], waits[b]) if len(waits[a]) and len(waits[b]) else None
            if apart and apart[1] >= 0.5 and apart[0] > 10:  # beyond the jobs that did not wait
                out.append(
                    f"{a} and {b}: within {CLOSE:.0%} of the jobs of each other for waits under {apart[0]:,.0f} s "
                    f"({apart[1]:.0%} of the jobs), so the lines overlap there and part beyond it."
                )
    return out


def wait_cdf_plot(records: list[RunRecord]) -> str:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, rec in enumerate(records):
        waits = _waits(rec)
        if not len(waits):
            continue
        xs = np.unique(waits)  # one point per distinct wait: the share of jobs that waited at most that long
        ys = np.searchsorted(waits, xs, side="right") / len(waits)
        xs, ys = np.concatenate([[xs[0]], xs]), np.concatenate([[0.0], ys])
        ax.step(xs, ys, where="post", label=rec.policy, markevery=0.07 + 0.01 * i, **style(i))
    # linear from 0 to 10 s, logarithmic beyond: the axis starts at 0 and the tail (hours) still fits
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("job wait (s; linear to 10 s, logarithmic beyond)")
    ax.set_ylabel("fraction of jobs that waited at most this long")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return _png(fig)


def _first_kills(rec: RunRecord) -> list[float]:
    """When each killed job was first killed (s from the start), sorted."""
    return sorted(o.kill_times[0] for o in rec.jobs.values() if o.kill_times)


def killed_plot(records: list[RunRecord]) -> str:
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, rec in enumerate(records):
        kills = _first_kills(rec)
        xs = [0.0] + [t / 3600 for t in kills] + [rec.end_s / 3600]
        ys = [0] + list(range(1, len(kills) + 1)) + [len(kills)]
        attempts = sum(len(o.kill_times) for o in rec.jobs.values())
        ax.step(
            xs, ys, where="post", label=f"{rec.policy}: {len(kills):,} jobs ({attempts:,} kills)",
            markevery=0.07 + 0.01 * i, **style(i),
        )  # fmt: skip
    ax.set_xlabel("hours since the start of the trace")
    ax.set_ylabel("jobs killed so far")
    most = max((len(_first_kills(r)) for r in records), default=0)
    ax.set_xlim(left=0)
    ax.set_ylim(0, max(1, most) * 1.05)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # jobs are counted whole
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return _png(fig)


def killed_overlaps(records: list[RunRecord]) -> list[str]:
    """Sentences naming the policies that killed nothing, and those whose kill curves are identical."""
    kills = {r.policy: [round(t) for t in _first_kills(r)] for r in records}
    none = [n for n, k in kills.items() if not k]
    out = []
    if len(none) == len(kills):
        out.append("No policy killed a job in this run: every line lies on zero.")
    elif none:
        out.append(
            f"{_and(none)} killed no job: {'its line lies' if len(none) == 1 else 'their lines lie'} on zero."
        )
    some = [n for n, k in kills.items() if k]
    out += [
        f"{_and(g)}: identical curves (the same jobs killed at the same times), drawn on top of each other."
        for g in _groups(some, lambda a, b: kills[a] == kills[b])
    ]
    return out


def timeline_overlaps(records: list[RunRecord]) -> list[str]:
    """A sentence naming the policies whose demand and capacity panels are identical."""

    def key(rec: RunRecord) -> tuple:
        return tuple((round(s.t), s.demand_gpus, s.capacity_gpus, s.provisioned_gpus) for s in rec.samples)

    keys = {r.policy: key(r) for r in records}
    return [
        f"{_and(g)}: identical panels (the same demand and capacity at every moment)."
        for g in _groups([r.policy for r in records], lambda a, b: keys[a] == keys[b])
    ]


def cost_plot(names: list[str], figures: dict[str, dict]) -> str:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = [LINE_COLORS[i % len(LINE_COLORS)] for i in range(len(names))]  # each policy its colour
    a1.bar(names, [figures[n]["cost_usd"] for n in names], color=colors)
    a1.set_ylabel("USD")
    a1.set_title("cost", loc="left", fontsize=10)
    width = 0.4
    xs = range(len(names))
    a2.bar(
        [x - width / 2 for x in xs],
        [figures[n]["gpu_hours_provisioned"] for n in names],
        width,
        label="provisioned",
        color=colors,
    )
    a2.bar([x + width / 2 for x in xs], [figures[n]["gpu_hours_used"] for n in names], width, label="used",
           color=colors, alpha=0.4, hatch="//", edgecolor="#333333")  # fmt: skip
    a2.set_ylabel("GPU-hours")
    a2.set_title("GPU-hours", loc="left", fontsize=10)
    a2.legend(
        handles=[
            Patch(facecolor="#999999", label="provisioned"),  # the colours are the policies'
            Patch(facecolor="#999999", alpha=0.4, hatch="//", edgecolor="#333333", label="used"),
        ]
    )
    for ax in (a1, a2):
        ax.set_xticks(list(xs), names, rotation=35, ha="right", fontsize=8)  # long names never overlap
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3, axis="y")
    return _png(fig)


TIMELINE = (
    "One panel per policy. The orange line is the GPU demand: GPUs requested by the jobs' pods, running or "
    "pending. The shaded area is the GPU capacity of registered nodes, stacked by region (a new colour is a "
    "spill-over to another region); the dotted line adds the instances still booting, which are billed too. "
    "Where the orange line rises above the shaded area, jobs wait for capacity; shaded area above it is idle "
    "capacity that is paid for."
)
WAIT_CDF = (
    "For each wait on the horizontal axis, the share of jobs that waited at most that long, from submission to "
    "the start of the attempt that ran to completion (time lost to a killed attempt counts). Higher and further "
    "left is better. The axis is linear up to 10 s and logarithmic beyond; the height of a curve at 0 is "
    "the share of jobs that did not wait; the right end is the longest wait (the tail: p95 and p99 are where "
    "the curve crosses 0.95 and 0.99)."
)
KILLED = (
    "Jobs killed so far, by the time each was first killed: a running attempt ended by the autoscaler "
    "(a drained or terminated node, an eviction). A killed job restarts from scratch, so its lost attempt "
    "shows in the wait and the cost above. A policy whose line stays on zero never killed a job; the legend "
    "gives each policy's jobs killed and kills (a job can be killed more than once)."
)
COST = (
    "Left: what the run's instances cost at on-demand prices. Right: GPU-hours provisioned (every instance "
    "that exists, booting ones included) next to the GPU-hours the jobs' running pods used; the gap between "
    "the two bars is idle capacity paid for."
)


def _cell(value) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def render(title: str, description: str, records: list[RunRecord], figures: dict[str, dict]) -> str:
    names = [r.policy for r in records]
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in COLUMNS)
    rows = "".join(
        f"<tr><th>{html.escape(n)}</th>"
        + "".join(f"<td>{_cell(figures[n].get(k))}</td>" for k, _ in COLUMNS)
        + "</tr>"
        for n in names
    )
    plots = [
        ("GPU demand and capacity over time", timeline_plot(records), TIMELINE, timeline_overlaps(records)),
        ("Job wait time, cumulative distribution", wait_cdf_plot(records), WAIT_CDF, wait_overlaps(records)),
        ("Jobs killed over time", killed_plot(records), KILLED, killed_overlaps(records)),
        ("Cost and GPU-hours", cost_plot(names, figures), COST, []),
    ]
    figs = "".join(
        f'<h2>{html.escape(t)}</h2>\n<img alt="{html.escape(t)}" src="data:image/png;base64,{data}">\n'
        f'<p class="how">{html.escape(how)}</p>\n'
        + "".join(f'<p class="overlap">{html.escape(line)}</p>\n' for line in notes)
        for t, data, how, notes in plots
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 80em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
thead th {{ background: #f0f0f0; }}
tbody th {{ text-align: left; }}
img {{ max-width: 100%; }}
p.how {{ max-width: 60em; }}
p.overlap {{ max-width: 60em; font-style: italic; }}
</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(description)}</p>
<table>
<thead><tr><th>policy</th>{head}</tr></thead>
<tbody>{rows}</tbody>
</table>
<p>Definitions of every figure: docs/simulator.md.</p>
{figs}</body>
</html>
"""


def write_report(
    directory: str | Path, title: str, description: str, records: list[RunRecord], figures: dict
) -> Path:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(render(title, description, records, figures))
    return path
