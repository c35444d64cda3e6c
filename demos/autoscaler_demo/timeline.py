"""The demo's timeline plot: pods pending and running, and GPUs registered per region, over wall seconds (bottom
axis) and the cluster model's minutes (top axis)."""

from __future__ import annotations

from pathlib import Path

from demos.autoscaler_demo.events import Decision
from demos.autoscaler_demo.watch import Sample

COLORS = ["#4c72b0", "#55a868", "#c44e52", "#8172b2"]


def plot_timeline(
    path: Path,
    samples: list[Sample],
    decisions: list[Decision],
    waves: list[tuple[float, str]],
    regions: list[str],
    compression: float = 60.0,
) -> Path:
    import matplotlib  # here, not at import: matplotlib takes a second to load and only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    samples = [*samples, samples[-1]]  # the last state holds to the end of the plot
    ts = [s.t for s in samples[:-1]] + [samples[-1].t + 1.0]
    top.step(ts, [s.pending for s in samples], where="post", label="pods pending", color="#dd8452")
    top.step(ts, [s.running for s in samples], where="post", label="pods running", color="#4c72b0")
    top.step(
        ts,
        [s.booting + s.awaiting_gpus for s in samples],
        where="post",
        label="nodes booting or awaiting GPUs",
        color="#8c8c8c",
        ls=":",
    )
    top.set_ylabel("pods / nodes")
    stacks = [[s.gpus_by_region.get(r, 0) for s in samples] for r in regions]
    bottom.stackplot(
        ts, stacks, labels=[f"GPUs in {r}" for r in regions], colors=COLORS[: len(regions)], step="post"
    )
    bottom.set_ylabel("GPUs on registered nodes")
    bottom.set_xlabel("wall seconds since the first wave")
    top.secondary_xaxis(
        "top", functions=(lambda s: s * compression / 60, lambda m: m * 60 / compression)
    ).set_xlabel(f"model minutes (the cluster model runs {compression:g}x the wall clock)", fontsize=8)
    for ax in (top, bottom):
        for at, _ in waves:
            ax.axvline(at, color="grey", ls="--", lw=0.8)
        for d in decisions:
            if d.kind == "failure":
                ax.axvline(d.t, color="#c44e52", ls=":", lw=0.8)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)  # outside: wave labels stay visible
    for at, title in waves:
        top.annotate(
            title, (at, 1), xycoords=("data", "axes fraction"), fontsize=7, rotation=90, va="top", ha="left"
        )
    top.set_title(
        "make demo: waves (dashed), InsufficientInstanceCapacity (dotted red)", loc="left", fontsize=9
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path
