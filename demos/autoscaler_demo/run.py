"""``make demo``: the real autoscaler process against an embedded AWS and a local Kubernetes API, end to end.

1. the embedded AWS: a moto server on loopback (``aws_server``) where the first region has room for only a couple
   of its 8-GPU instances (InsufficientInstanceCapacity beyond that, recorded as failed scaling activities);
2. a local bootstrap of the spec's node groups in moto in every region (``bootstrap``; not Terraform);
3. the Kubernetes side, given by the caller (demos/cluster.py: the real control plane with what `invoke up`
   deploys and kwok nodes following moto's instances, a node registering once its instance has booted; time
   compressed);
4. the REAL ``autoscaler run`` process pointed at both;
5. three waves of jobs (``workload``); live progress: pending pods, nodes per group and region, and every scale
   decision and capacity failure as it happens; then a summary and a timeline plot.

No network but loopback; every process it starts is stopped at the end, on failure and on Ctrl-C. It fails
loudly (exit status 1) when the autoscaler does not bring capacity for every pod in time.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from rich.console import Console
from rich.live import Live
from rich.table import Table

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from demos.autoscaler_demo.events import Decision, compression_note, model_time, stamp
from demos.autoscaler_demo.processes import Child, Children
from demos.autoscaler_demo.timeline import plot_timeline
from demos.autoscaler_demo.watch import Watcher
from demos.autoscaler_demo.workload import Wave, wave_pods, waves
from localcluster.aws_bootstrap import create_groups
from simulator.scenarios import demo_capacity
from simulator.workload import NAMESPACE

COMPRESSION = (
    60.0  # the default: model seconds per real second (a 4.5-minute GPU boot takes 4.5 s); --compression
)
DEADLINE_MODEL_S = (
    4500.0  # how long after the last wave every pod must run, model seconds (75 wall seconds at 60x)
)
DEADLINE_FLOOR_S = (
    75.0  # and never less than this many wall seconds (above 60x the stack needs more model time)
)
SCAN_INTERVAL_S = 2
SCAN_INTERVAL = f"{SCAN_INTERVAL_S}s"


class DemoFailed(UserError):
    """The demo ran but the autoscaler did not do its job: exit status 1."""

    exit_code = 1


# the first region's 8-GPU types the workload uses: room for 2 instances of the preferred one, none of the others,
# so the sweep has to spill over to the next region; the simulator's replay of the demo gets the same limits
capacity_limits = demo_capacity


def _child_env() -> dict[str, str]:
    loopback = "127.0.0.1,localhost"
    return {
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": loopback,
        "no_proxy": loopback,
        "PYTHONUNBUFFERED": "1",
    }


def _wait_for_log(child: Child, message: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    needle = f'"message":"{message}"'
    while time.monotonic() < deadline:
        if child.log_path.exists() and needle in child.log_path.read_text():
            return
        if not child.running():
            raise DemoFailed(f"{child.name} exited with status {child.proc.returncode}; see {child.log_path}")
        time.sleep(0.2)
    raise DemoFailed(f"{child.name} did not start within {timeout_s:.0f} s; see {child.log_path}")


def parse_compression(value) -> float:
    """``--compression``: model seconds per wall second, a number of at least 1 (the model never runs slower than
    the wall clock); one line and exit status 2 otherwise."""
    if value is None or value == "":
        return COMPRESSION
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = None
    if out is None or out != out or out in (float("inf"), float("-inf")) or out < 1:
        raise UserError(
            f"--compression {value!r}: give the model seconds per wall second, a number of at least 1 "
            f"(default {COMPRESSION:g}; 15 runs the demo four times slower)"
        )
    return out


def deadline_for(compression: float) -> float:
    """Wall seconds after the last wave by which every pod must run: ``DEADLINE_MODEL_S`` of model time, at least
    ``DEADLINE_FLOOR_S`` of wall time."""
    return max(DEADLINE_MODEL_S / compression, DEADLINE_FLOOR_S)


def _status_table(watcher: Watcher, regions: list[str], compression: float = COMPRESSION) -> Table:
    sample = watcher.samples[-1] if watcher.samples else None
    table = Table(title=f"{stamp(watcher.now(), compression)}  " + _counts(sample), title_justify="left")
    table.add_column("group")
    table.add_column("region")
    table.add_column("nodes", justify="right")
    for group, n in sorted((sample.nodes_by_group if sample else {}).items()):
        region = next((r for r in regions if f"-{r}-" in group), "?")
        table.add_row(group, region, str(n))
    return table


def _counts(sample) -> str:
    if sample is None:
        return ""
    gpus = ", ".join(f"{r} {g}" for r, g in sorted(sample.gpus_by_region.items()))
    nodes = f"nodes booting {sample.booting}, awaiting GPUs {sample.awaiting_gpus}"
    return (
        f"pods pending {sample.pending}, running {sample.running}, done {sample.done}; {nodes}; GPUs: {gpus}"
    )


def event_line(d: Decision, compression: float = COMPRESSION) -> str:
    """One live line: both clocks, labelled, then what happened."""
    return f"{stamp(d.t, compression)}  {d.text}"


def _say(console: Console, d: Decision, compression: float = COMPRESSION) -> None:
    style = d.style or {"scale": "green", "failure": "red", "error": "yellow", "note": ""}[d.kind]
    console.print(event_line(d, compression), style=style or None, markup=False, highlight=False)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def submitted_text(index: int, count: int, wave: Wave, pods: int) -> str:
    """The line printed when a wave is submitted: its number and title, what it asks for."""
    return (
        f"submitted wave {index}/{count} '{wave.title}': {_plural(len(wave.jobs), 'job')}, "
        f"{_plural(wave.gpus, 'GPU')}, {_plural(pods, 'pod')}"
    )


def running_text(index: int, count: int, wave: Wave, at: float, compression: float = COMPRESSION) -> str:
    took = at - wave.at_s
    return (
        f"every pod of wave {index}/{count} '{wave.title}' is running, "
        f"wall {took:.1f} s = model {model_time(took, compression)} after it was submitted"
    )


def plan_lines(plan: list[Wave], compression: float = COMPRESSION) -> list[str]:
    """The workload, said once at the start: every wave's title and when it comes, on both clocks."""
    return [
        f"  wave {i}/{len(plan)} at {stamp(w.at_s, compression)}: '{w.title}' ({_plural(w.gpus, 'GPU')})"
        for i, w in enumerate(plan, 1)
    ]


def autoscaler_child(
    aws_url: str, cluster: str, regions: list[str], kubeconfig: Path, out: Path, env: dict,
    scan_interval: str = SCAN_INTERVAL,
) -> Child:  # fmt: skip
    """The real ``autoscaler run`` process against the moto server and the cluster (every ``scan_interval``
    without events; a pending pod brings a pass at once either way)."""
    argv = [sys.executable, "-m", "autoscaler", "run", "--cluster-name", cluster, "--regions", ",".join(regions),
            "--kubeconfig", str(kubeconfig), "--aws-endpoint-url", aws_url, "--scan-interval", scan_interval,
            "--metrics-port", "0", "--log-level", "info"]  # fmt: skip
    return Child("autoscaler", argv, out, env)


def run_demo(
    spec_path: str | None = None,
    out_dir: str | Path = "build/demo",
    deadline_s: float | None = None,
    *,
    cluster,
    compression: float = COMPRESSION,
) -> dict:
    """Run the demo; returns its summary. Raises DemoFailed (exit 1) when capacity never came.

    ``compression``: model seconds per wall second (the waves' times, the node boot delays, the jobs' durations,
    both clocks in every line); ``deadline_s``: wall seconds after the last wave by which every pod must run
    (default :func:`deadline_for`).

    ``cluster(spec, aws_url, regions, out, compression, say)``: a context manager that brings up the Kubernetes
    side following the embedded AWS (demos/cluster.py: the real control plane with kwok nodes) and yields
    ``(admin_kubeconfig, autoscaler_kubeconfig, submit)``, ``submit(job, namespace)`` creating a job as a
    researcher does."""
    spec = load_spec(spec_path)
    regions = list(spec.spill_over_order)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    console = Console(width=None if sys.stdout.isatty() else 140)
    env = _child_env()
    os.environ.update({k: v for k, v in env.items() if k in ("NO_PROXY", "no_proxy")})
    limits = capacity_limits(spec)
    py = sys.executable
    with Children() as children, contextlib.ExitStack() as later:
        console.rule("make demo: the real autoscaler on an embedded AWS and a local Kubernetes API")
        aws = children.start(
            Child(
                "aws",
                [
                    py,
                    "-m",
                    "localcluster.aws_server",
                    *[f"--limit={r}/{t}={n}" for (r, t), n in limits.items()],
                ],
                out,
                env,
            )
        )
        url = aws.ready_line(60)["url"]
        room = ", ".join(f"{n} {t}" for (_, t), n in limits.items())
        console.print(
            f"embedded AWS (moto) at {url}; {regions[0]} has room for: {room} (InsufficientInstanceCapacity beyond)"
        )
        names = create_groups(spec, url, regions)
        console.print(
            f"local bootstrap (not Terraform): {len(names)} Auto Scaling groups in {', '.join(regions)}"
        )
        say = lambda line: console.print(line, markup=False)  # noqa: E731
        kubeconfig, autoscaler_kubeconfig, submit = later.enter_context(
            cluster(spec, url, regions, out, compression, say)
        )
        autoscaler = children.start(
            autoscaler_child(url, spec.name, regions, autoscaler_kubeconfig, out, env)
        )
        _wait_for_log(autoscaler, "running", 60)
        console.print(f"autoscaler run: pid {autoscaler.proc.pid}, log {autoscaler.log_path}")
        console.print(compression_note(compression, SCAN_INTERVAL_S))
        console.print("workload:\n" + "\n".join(plan_lines(waves(compression), compression)), markup=False)
        core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(kubeconfig)))
        deadline = deadline_for(compression) if deadline_s is None else deadline_s
        summary = _drive(console, core, url, regions, autoscaler, deadline, submit, compression)
    plot = plot_timeline(
        out / "timeline.png", summary.pop("_samples"), summary.pop("_decisions"),
        [(w.at_s, w.title) for w in waves(compression)], regions, compression,
    )  # fmt: skip
    summary["timeline"] = str(plot)
    _print_summary(console, summary, compression)
    return summary


def _drive(
    console: Console,
    core,
    aws_url: str,
    regions: list[str],
    autoscaler: Child,
    deadline_s: float,
    submit,
    compression: float = COMPRESSION,
) -> dict:
    """``submit(job, namespace)``: how a job is created (a Job and, for a gang, its PodGroup)."""
    plan = waves(compression)
    pods_of = {w.title: wave_pods(w) for w in plan}
    pods_per_job = Counter(p["metadata"]["labels"]["job-name"] for pods in pods_of.values() for p in pods)
    total = sum(len(p) for p in pods_of.values())
    watcher = Watcher(core, aws_url, regions, autoscaler.log_path)
    submitted: list[Wave] = []
    all_running_at: dict[str, float] = {}
    live = Live(console=console, refresh_per_second=4, transient=True) if console.is_terminal else None
    last_status = -10.0
    if live:
        live.start()
    try:
        while True:
            now = watcher.now()
            for wave in plan:
                if wave not in submitted and now >= wave.at_s:
                    for job in wave.jobs:
                        submit(job, NAMESPACE)
                    submitted.append(wave)
                    index = plan.index(wave) + 1
                    pods = len(pods_of[wave.title])
                    watcher.note(submitted_text(index, len(plan), wave, pods), "bold", t=now)
            sample = watcher.look()
            for wave in submitted:
                if wave.title not in all_running_at and all(
                    watcher.started[j.id] >= pods_per_job[j.id] for j in wave.jobs
                ):
                    all_running_at[wave.title] = sample.t  # the look that saw them all running
                    index = plan.index(wave) + 1
                    watcher.note(
                        running_text(index, len(plan), wave, sample.t, compression), "bold green", t=sample.t
                    )
            if live:
                live.update(_status_table(watcher, regions, compression))
            elif now - last_status >= 5:
                watcher.note(_counts(sample), t=now)
                last_status = now
            for d in watcher.new_decisions():
                _say(console, d, compression)
            if len(submitted) == len(plan) and len(all_running_at) == len(plan):
                break
            if not autoscaler.running():
                raise DemoFailed(
                    f"the autoscaler exited with status {autoscaler.proc.returncode}; see {autoscaler.log_path}"
                )
            if now - plan[-1].at_s > deadline_s:
                raise DemoFailed(
                    f"the autoscaler never brought capacity: {sample.pending} of {total} pods still pending "
                    f"{deadline_s:.0f} s after the last wave; see {autoscaler.log_path}"
                )
            time.sleep(0.3)
    finally:
        for d in watcher.flush():
            _say(console, d, compression)
        if live:
            live.stop()
    last = watcher.samples[-1]
    return {
        "seconds": round(watcher.now(), 1),
        "pods": total,
        "waves": {w.title: round(all_running_at[w.title] - w.at_s, 1) for w in plan},
        "gpus_by_region": last.gpus_by_region,
        "nodes_by_group": last.nodes_by_group,
        "nodes_seen": len(watcher.stages_seen),
        "group_nodes_seen": len(watcher.group_nodes_seen),
        "nodes_seen_booting": sum(1 for s in watcher.stages_seen.values() if "booting" in s),
        "nodes_seen_awaiting_gpus": sum(1 for s in watcher.stages_seen.values() if "awaiting-gpus" in s),
        "scale_decisions": sum(1 for d in watcher.decisions if d.kind == "scale"),
        "capacity_failures": sum(1 for d in watcher.decisions if d.kind == "failure"),
        "_samples": watcher.samples,
        "_decisions": watcher.decisions,
    }


def _print_summary(console: Console, summary: dict, compression: float = COMPRESSION) -> None:
    console.rule("summary")
    count = len(summary["waves"])
    for i, (title, seconds) in enumerate(summary["waves"].items(), 1):
        console.print(
            f"wave {i}/{count} '{title}': every pod running wall {seconds:.1f} s = model "
            f"{model_time(seconds, compression)} after submission",
            markup=False,
        )
    gpus = ", ".join(f"{r}: {g}" for r, g in sorted(summary["gpus_by_region"].items()))
    console.print(f"GPUs registered per region at the end: {gpus}")
    console.print(
        f"{summary['nodes_seen']} nodes; {summary['nodes_seen_booting']} seen booting (NotReady or tainted not-ready/"
        f"uninitialized), {summary['nodes_seen_awaiting_gpus']} seen Ready before their device plugin advertised "
        'the GPUs (docs/model.md, "Node lifecycle")'
    )
    console.print(
        f"{summary['scale_decisions']} scale decisions, {summary['capacity_failures']} InsufficientInstanceCapacity "
        f"failures absorbed by spill-over; {summary['pods']} pods; wall {summary['seconds']:.0f} s = model "
        f"{model_time(summary['seconds'], compression)} (the model runs {compression:g}x the wall clock)"
    )
    console.print(f"timeline plot: {summary['timeline']}")
