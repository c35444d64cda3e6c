"""``invoke bench-peers``: our autoscaler and Karpenter on the same bursts, each run from a fresh local stack.

For every burst (``scenarios.py``) and every peer, a fresh stack (``stack.py``: etcd, kube-apiserver,
kube-scheduler, kube-controller-manager, kwok, the real binaries), then:

- ``ours``: the demo's moto server (``aws.py``, the burst's capacity limits), the spec's groups in it
  (``localcluster.aws_bootstrap``), the node agent (a kwok Node per instance) and the real ``autoscaler run``;
- ``karpenter-<region>``: Karpenter v1.15.0 (kwok provider behind our main, the same capacity limits) over one
  region's zones, as real deployments run it (one per cluster, one cluster per region);
- ``karpenter-ideal``: one Karpenter over all three regions' zones, which no real deployment can run (one
  cluster spans one region): an idealised bound, labelled so.

Both get the same idle time before removing a node (``--idle-s``: our ``--idle-threshold``, Karpenter's
``consolidateAfter``). The burst's pods are created at once; the run waits for every pod Running (or the
deadline), deletes them, waits ``--after-s`` and counts the nodes still up. Printed: a table, and the figures as
JSON and a plot under ``--out``.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from rich.console import Console
from rich.table import Table

from autoscaler.adapters.aws import AwsCloud
from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from clusterspec.names import AUTOSCALER_NAMESPACE
from clusterspec.spec import Cluster as Spec
from demos.autoscaler_demo.processes import Child, ChildError, Children
from demos.bench_peers import karpenter, sim_check, stack
from demos.bench_peers.measure import Watcher, figures, process_use
from demos.bench_peers.scenarios import DO_NOT_DISRUPT, Burst, bursts
from localcluster.aws_bootstrap import create_groups
from localcluster.nodes import NodeAgent
from provision import deploy
from simulator.model.boot import NodeLifecycle
from simulator.workload import NAMESPACE

IDEAL = "karpenter-ideal"
SCAN_S = 2


class BenchFailed(UserError):
    """The benchmark ran but ours did not bring capacity for every pod: exit status 1."""

    exit_code = 1


def peers(spec: Spec, small: bool) -> list[str]:
    regions = spec.spill_over_order
    chosen = regions[:1] if small else regions
    return ["ours", *[f"karpenter-{r}" for r in chosen], IDEAL]


def peers_for(burst: Burst, who: list[str], spec: Spec) -> list[str]:
    """The peers a burst runs for: the Karpenters of the regions after the first only where the first region runs
    short (elsewhere each is the first region's Karpenter in another cluster, the same run on the same kwok)."""
    if burst.short:
        return who
    first = f"karpenter-{spec.spill_over_order[0]}"
    return [p for p in who if not p.startswith("karpenter-") or p in (first, IDEAL)]


def _env() -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PYTHONUNBUFFERED": "1",
    }


def _wait_for_log(child: Child, needle: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.log_path.exists() and needle in child.log_path.read_text():
            return
        if not child.running():
            raise ChildError(f"{child.name} exited with status {child.proc.returncode}; see {child.log_path}")
        time.sleep(0.2)
    raise ChildError(f"{child.name} did not start within {timeout_s:.0f} s; see {child.log_path}")


def bench_spec(spec: Spec, idle_s: int) -> Spec:
    """The spec both sides of the comparison run: the real ``autoscaler run`` (its arguments as ``invoke up``
    deploys them, ``provision.deploy.autoscaler_args``) and the simulator's ``batch`` (``sim_check``). The
    benchmark's two changes: a 2-s scan (the deployment's 10 s would add up to 10 s to every time) and the idle
    time both autoscalers wait before removing a node."""
    settings = spec.autoscaler.model_copy(update={"scan_interval_s": SCAN_S, "idle_threshold_s": idle_s})
    return spec.model_copy(update={"autoscaler": settings})


def autoscaler_argv(spec: Spec, kubeconfig: Path, url: str) -> list[str]:
    """``autoscaler run`` as deployed (spare GPUs, warm pools, scale-in fraction from the spec), one replica out
    of cluster: no leader election, no metrics port."""
    deployed = [a for a in deploy.autoscaler_args(spec) if a != "--leader-elect"]
    deployed = [a for a in deployed if not a.startswith("--metrics-port=")]
    return [sys.executable, "-m", "autoscaler", *deployed, "--cluster-name", spec.name,
            "--regions", ",".join(spec.spill_over_order), "--kubeconfig", str(kubeconfig),
            "--aws-endpoint-url", url, "--namespace", AUTOSCALER_NAMESPACE, "--metrics-port", "0",
            "--log-level", "info"]  # fmt: skip


def _start_ours(children: Children, st: stack.Stack, spec: Spec, burst: Burst, core, out: Path):
    """The moto server, the spec's groups, the node agent and ``autoscaler run``; the Nodes of the groups'
    minimum (registered before the autoscaler started: not bought by it)."""
    py = sys.executable
    limits = burst.limits(spec)
    aws = children.start(
        Child("aws", [py, "-m", "demos.bench_peers.aws", *[f"--limit={r}/{t}={n}" for (r, t), n in limits.items()]],
              out, _env())
    )  # fmt: skip
    url = aws.ready_line(60)["url"]
    regions = list(spec.spill_over_order)
    create_groups(spec, url, regions)
    # localcluster's node agent as kwok's registration (no boot, Ready at once, GPUs advertised), reading the
    # groups with a key of its own: the moto server counts only the autoscaler's key ("demo") as its calls
    session = boto3.Session(aws_access_key_id="bench-agent", aws_secret_access_key="bench-agent")
    cloud = AwsCloud(spec.name, regions, endpoint_url=url, session=session)
    agent = NodeAgent(cloud, core.api_client, lifecycle=NodeLifecycle.instant(), boot=False)
    agent.sync_once()  # every instance of the groups' minimum registered before the autoscaler starts
    minimum = {n.metadata.name for n in core.list_node().items}
    agent.start()
    child = children.start(Child("autoscaler", autoscaler_argv(spec, st.kubeconfig_for("autoscaler"), url),
                                 out, _env()))  # fmt: skip
    _wait_for_log(child, '"message":"running"', 60)

    def aws_calls() -> dict[str, int]:
        with urllib.request.urlopen(f"{url}/_bench/calls", timeout=5) as r:
            calls = json.loads(r.read())
        return {k.split(" ", 1)[1]: v for k, v in calls.items() if k.startswith("demo ")}

    return child, agent, aws_calls, minimum


def _settle(core, timeout_s: float = 30.0) -> None:
    """Until the Node count held still for 3 s (ours: the groups' minimum instances registered)."""
    deadline = time.monotonic() + timeout_s
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = len(core.list_node().items)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= 3:
            return
        time.sleep(0.5)


def _create(core, pods: list[dict]) -> dict[str, float]:
    created: dict[str, float] = {}

    def one(pod: dict) -> None:
        core.create_namespaced_pod(NAMESPACE, pod)
        created[pod["metadata"]["name"]] = time.monotonic()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, pods))
    return created


def _delete_all(core, timeout_s: float = 60.0) -> None:
    core.delete_collection_namespaced_pod(NAMESPACE, grace_period_seconds=0)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and core.list_namespaced_pod(NAMESPACE).items:
        time.sleep(0.5)


def _delete_each_after(core, created: dict[str, float], after_s: float) -> None:
    for name, at in sorted(created.items(), key=lambda kv: kv[1]):
        time.sleep(max(0.0, at + after_s - time.monotonic()))
        try:
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
        except k8s.ApiException as e:
            if e.status != 404:
                raise


def _dump(st: stack.Stack, path: Path) -> None:
    """The nodes (taints, readiness) and pods (phase, node, condition) as the run left them, for the record."""
    cols = (
        "NAME:.metadata.name,READY:.status.conditions[?(@.type=='Ready')].status,TAINTS:.spec.taints[*].key"
    )
    pods = "NAME:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName,WHY:.status.conditions[*].reason"
    text = karpenter.kubectl(st, "get", "nodes", "-o", f"custom-columns={cols}")
    text += karpenter.kubectl(st, "get", "pods", "-n", NAMESPACE, "-o", f"custom-columns={pods}")
    path.write_text(text)


def run_one(
    spec: Spec, burst: Burst, peer: str, out: Path, idle_s: int, after_s: float, deadline_s: float
) -> dict:
    """One burst for one peer on a fresh stack; the row of figures. ``spec``: ``bench_spec``'s."""
    out.mkdir(parents=True, exist_ok=True)
    with Children() as children:
        st = stack.start(children, out / "stack")
        core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(st.kubeconfig)))
        for ns in (NAMESPACE, AUTOSCALER_NAMESPACE):
            core.create_namespace({"metadata": {"name": ns}})
        agent, minimum = None, set()
        if peer == "ours":
            child, agent, aws_calls, minimum = _start_ours(children, st, spec, burst, core, out)
            user = "autoscaler"
        else:
            regions = list(spec.spill_over_order) if peer == IDEAL else [peer.removeprefix("karpenter-")]
            child, port = karpenter.start(children, st, spec, regions, burst.limits(spec), idle_s)

            def aws_calls() -> dict[str, int]:
                return karpenter.cloud_calls(port)

            user = "karpenter"
        try:
            _settle(core)
            pods = burst.pods(None if peer == "ours" else DO_NOT_DISRUPT)
            names = [p["metadata"]["name"] for p in pods]
            # nodes bought: every Node but the groups' minimum, those ours bought before the submission (its warm
            # pools and spare GPUs) included, as the simulator counts them
            watcher = Watcher(core, 1.0 if len(pods) > 500 else 0.5).start(minimum)
            use0 = process_use(child.proc.pid)
            calls0, k8s0 = aws_calls(), st.api_calls(user)  # from the submission on: startup is not counted
            created = _create(core, pods)
            all_running = None
            if burst.delete_after_s is not None:
                _delete_each_after(core, created, burst.delete_after_s)
            else:
                deadline = time.monotonic() + deadline_s
                while time.monotonic() < deadline:
                    if watcher.samples and set(names) <= set(watcher.running_at):
                        all_running = max(watcher.running_at[n] for n in names) - watcher.t0
                        break
                    time.sleep(0.5)
            running_at_end, bound_at_end = set(watcher.running_now), dict(watcher.bound_now)
            # what ran by now: pods still pending start on the GPUs the deletion below frees (kube-scheduler binds
            # them while the others go), which is not the autoscaler's doing
            ran = set(watcher.running_at)
            _dump(st, out / "before-delete.txt")
            _delete_all(core)
            time.sleep(after_s)
            nodes_after = watcher.up_now()
            use1 = process_use(child.proc.pid)
            calls = {k: n - calls0.get(k, 0) for k, n in aws_calls().items() if n > calls0.get(k, 0)}
            watcher.stop()
        finally:
            if agent is not None:
                agent.stop()
        row = {
            "scenario": burst.name,
            "peer": peer,
            **figures(watcher, names, all_running, nodes_after, running_at_end, ran, bound_at_end),
            "aws_calls": sum(calls.values()),
            "aws_calls_by_operation": calls,
            "k8s_calls": st.api_calls(user) - k8s0,
            "cpu_s": round(use1.cpu_s - use0.cpu_s, 1),
            "peak_rss_mib": round(use1.peak_rss_mib),
            "samples": watcher.samples,
        }
    (out / "row.json").write_text(json.dumps(row, indent=1))
    return row


COLUMNS = [
    ("scenario", "scenario"), ("peer", "autoscaler"), ("nodes_bought", "nodes bought"),
    ("peak_cost_per_h", "peak $/h"), ("all_running_s", "all Running (s)"), ("pods_never_run", "never ran"),
    ("partial_gangs", "partial gangs"), ("nodes_up_after", "nodes up after"), ("aws_calls", "AWS calls"),
    ("k8s_calls", "k8s calls"), ("cpu_s", "CPU s"), ("peak_rss_mib", "peak MiB"),
]  # fmt: skip


def label(peer: str) -> str:
    return "karpenter-ideal (idealised: all regions)" if peer == IDEAL else peer


def table(rows: list[dict], after_s: float) -> Table:
    t = Table(
        title=f"bench-peers (nodes up after: {after_s:g} s after the pods vanished)", title_justify="left"
    )
    for _, head in COLUMNS:
        t.add_column(head, justify="left" if head in ("scenario", "autoscaler") else "right")
    for r in rows:
        t.add_row(
            *[("never" if r[k] is None else label(r[k]) if k == "peer" else str(r[k])) for k, _ in COLUMNS]
        )
    return t


def verdict(rows: list[dict], deleted: set[str]) -> tuple[list[str], list[str]]:
    """(warnings, failures) of our rows, the scenarios whose pods are deleted early left out: a pod never bound to
    a node is the autoscaler's failure (it did not bring the capacity); one bound to a node, still up, that never
    ran it is the node agent's (kwok's), a warning that names it."""
    warnings, failures = [], []
    for r in rows:
        if r["peer"] != "ours" or r["scenario"] in deleted:
            continue
        stuck = r.get("pods_bound_never_ran") or {}
        if stuck:
            warnings.append(
                f"{r['scenario']}: {len(stuck)} pod(s) bound to a node that never ran them (the node agent's, "
                "kwok's, not the autoscaler's): " + ", ".join(f"{p} on {n}" for p, n in sorted(stuck.items()))
            )
        if r["pods_never_run"] > len(stuck):
            failures.append(
                f"{r['scenario']}: ours left {r['pods_never_run'] - len(stuck)} pods never Running"
            )
    return warnings, failures


def markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(h for _, h in COLUMNS) + " |"
    sep = "|" + "|".join("---" if k in ("scenario", "peer") else "---:" for k, _ in COLUMNS) + "|"
    body = [
        "| "
        + " | ".join(
            ("never" if r[k] is None else label(r[k]) if k == "peer" else str(r[k])) for k, _ in COLUMNS
        )
        + " |"
        for r in rows
    ]
    return "\n".join([head, sep, *body])


def sim_table(checks: list[dict]) -> Table:
    t = Table(
        title=f"the simulator's peers against the real runs (agree: within {sim_check.TOLERANCE:.0%} or 1)",
        title_justify="left",
    )
    for head in (
        "scenario",
        "autoscaler",
        "simulator policy",
        "nodes bought real/sim",
        "never ran real/sim",
        "agree",
    ):
        t.add_column(head)
    for c in checks:
        t.add_row(c["scenario"], label(c["peer"]), c["sim_policy"], "{} / {}".format(*c["nodes_bought"]),
                  "{} / {}".format(*c["pods_never_run"]), "yes" if c["agrees"] else "NO")  # fmt: skip
    return t


def plot(rows: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scen = list(dict.fromkeys(r["scenario"] for r in rows))
    fig, axes = plt.subplots(len(scen), 2, figsize=(12, 3 * len(scen)), squeeze=False)
    for i, s in enumerate(scen):
        for r in (r for r in rows if r["scenario"] == s):
            t = [x[0] for x in r["samples"]]
            axes[i][0].plot(t, [x[2] for x in r["samples"]], label=label(r["peer"]))
            axes[i][1].plot(t, [x[4] for x in r["samples"]], label=label(r["peer"]))
        axes[i][0].set_title(f"{s}: pods Running")
        axes[i][1].set_title(f"{s}: cost of the nodes bought ($/h)")
        for ax in axes[i]:
            ax.set_xlabel("seconds after submission")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(
    small: bool = False, scenario: list[str] | None = None, peer: list[str] | None = None, out: str | None = None,
    idle_s: int = 30, after_s: float = 60.0, deadline_s: float | None = None, spec_path: str | None = None,
) -> list[dict]:  # fmt: skip
    spec = bench_spec(load_spec(spec_path), idle_s)
    try:
        chosen = bursts(small, scenario)
    except ValueError as e:
        raise UserError(str(e)) from None
    who = peers(spec, small)
    if peer:
        unknown = [p for p in peer if p not in peers(spec, False)]
        if unknown:
            raise UserError(f"--peer {', '.join(unknown)}: unknown; known: {', '.join(peers(spec, False))}")
        who = peer
    root = Path(out or "build/bench-peers")
    deadline = deadline_s or (90.0 if small else 240.0)
    console = Console(width=None if sys.stdout.isatty() else 200)
    rows = []
    for b in chosen:
        for p in who if peer else peers_for(b, who, spec):
            console.print(f"bench-peers: {b.name} ({b.title}) for {label(p)}", highlight=False)
            try:
                rows.append(run_one(spec, b, p, root / b.name / p, idle_s, after_s, deadline))
            except ChildError as e:
                raise UserError(str(e)) from None
    root.mkdir(parents=True, exist_ok=True)
    (root / "results.json").write_text(
        json.dumps([{k: v for k, v in r.items() if k != "samples"} for r in rows], indent=1)
    )
    (root / "table.md").write_text(markdown(rows) + "\n")
    console.print(table(rows, after_s))
    checks = sim_check.compare(rows, chosen, spec, root / "sim-cache")
    (root / "sim-check.json").write_text(json.dumps(checks, indent=1))
    (root / "sim-check.md").write_text(sim_check.markdown(checks) + "\n")
    console.print(sim_table(checks))
    console.print(
        f"figures: {root / 'results.json'}, {root / 'table.md'}; plot: {plot(rows, root / 'bench-peers.png')}"
    )
    deleted = {b.name for b in chosen if b.delete_after_s is not None}
    warnings, failures = verdict(rows, deleted)
    for line in warnings:
        console.print(f"[yellow]{line}")
    if failures:  # ours must bring capacity for every pod: CI's small run fails here rather than rot
        raise BenchFailed(failures)
    return rows
