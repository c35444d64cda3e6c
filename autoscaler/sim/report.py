"""The simulation report: one self-contained HTML page (plots embedded as PNG) and the figures table.

Plots: GPU demand and capacity over time per policy (capacity stacked by region, so spill-over shows), the
job wait-time CDF of every policy, and cost with GPU-hours provisioned and used.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from autoscaler.sim.metrics import RunRecord, job_wait_s  # noqa: E402

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
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize=7, ncol=2)
    axes[-1, 0].set_xlabel("hours since the start of the trace")
    return _png(fig)


def wait_cdf_plot(records: list[RunRecord]) -> str:
    fig, ax = plt.subplots(figsize=(7, 4))
    for rec in records:
        waits = sorted(job_wait_s(o, rec.end_s) for o in rec.jobs.values())
        if not waits:
            continue
        ys = [(i + 1) / len(waits) for i in range(len(waits))]
        ax.step([max(w, 1.0) for w in waits], ys, where="post", label=rec.policy)
    ax.set_xscale("log")
    ax.set_xlabel("job wait (s, log scale; under 1 s shown at 1 s)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    ax.legend()
    return _png(fig)


def cost_plot(names: list[str], figures: dict[str, dict]) -> str:
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
    a1.bar(names, [figures[n]["cost_usd"] for n in names], color="#4c72b0")
    a1.set_ylabel("USD")
    a1.set_title("cost", loc="left", fontsize=10)
    width = 0.4
    xs = range(len(names))
    a2.bar(
        [x - width / 2 for x in xs],
        [figures[n]["gpu_hours_provisioned"] for n in names],
        width,
        label="provisioned",
    )
    a2.bar([x + width / 2 for x in xs], [figures[n]["gpu_hours_used"] for n in names], width, label="used")
    a2.set_xticks(list(xs), names)
    a2.set_ylabel("GPU-hours")
    a2.set_title("GPU-hours", loc="left", fontsize=10)
    a2.legend()
    for ax in (a1, a2):
        ax.grid(alpha=0.3, axis="y")
    return _png(fig)


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
        ("GPU demand and capacity over time", timeline_plot(records)),
        ("Job wait time, cumulative distribution", wait_cdf_plot(records)),
        ("Cost and GPU-hours", cost_plot(names, figures)),
    ]
    figs = "".join(
        f'<h2>{html.escape(t)}</h2>\n<img alt="{html.escape(t)}" src="data:image/png;base64,{data}">\n'
        for t, data in plots
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
