"""``make demo`` (``invoke demo``): the autoscaler's demo on a cluster set up as `invoke up` sets one up.

The Kubernetes side is real (localcluster/): etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
the gang scheduler built from pinned Go modules by `make tools`, kwok for the nodes' heartbeats and pods, and the
node agent registering the embedded AWS's instances as Nodes; what `invoke up` deploys (localcluster/day_one.py)
is applied with kubectl and a refusal fails the demo with the API server's message; the autoscaler runs as its
ServiceAccount."""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager

from clusterspec.errors import UserError
from clusterspec.loader import load_spec
from clusterspec.names import AUTOSCALER_NAMESPACE
from demos import phases, sim_vs_real
from demos.autoscaler_demo.processes import ChildError
from demos.autoscaler_demo.run import COMPRESSION, SCAN_INTERVAL_S, DemoFailed, parse_compression, run_demo
from demos.day_one import wait_for_autoscaler
from localcluster import aws_cluster, binaries, workload
from localcluster.stack import StackFailed
from provision import deploy


@contextmanager
def real_cluster(spec, aws_url: str, regions: list[str], out, compression: float, say):
    """The real control plane following the embedded AWS; yields (admin kubeconfig, the autoscaler's, submit)."""
    missing = binaries.missing((*binaries.CONTROL_PLANE, "kwok"))
    if missing:
        raise DemoFailed(f"not built: {', '.join(missing)}; run `make tools` (localcluster/build-tools.sh)")
    os.environ["PATH"] = binaries.on_path()  # kubectl 1.35, not an older one on the PATH
    t0 = time.monotonic()
    with aws_cluster.running(spec, aws_url, regions, out / "cluster", compression) as live:
        stack = live.stack
        say(f"real control plane at {stack.server} (kube-apiserver {binaries.version('kube-apiserver')}, etcd, "
            f"controller-manager, kube-scheduler, kwok), up in {stack.timings['started']:.1f} s; "
            f"kubeconfig {live.admin_kubeconfig}")  # fmt: skip
        for a in live.applied:
            say(f"$ kubectl apply --server-side -f {a.manifest.path}  ({a.manifest.label})")
            for w in a.warnings:
                say(f"  {w}")
        stack.kubectl("create", "namespace", workload_namespace())
        wait_for_autoscaler(live.admin_kubeconfig)
        say(f"the autoscaler's Deployment is available in {AUTOSCALER_NAMESPACE} "
            f"({time.monotonic() - t0:.1f} s after the start)")  # fmt: skip
        kubeconfig = aws_cluster.service_account_kubeconfig(
            stack, AUTOSCALER_NAMESPACE, deploy.NAME, out / "autoscaler.kubeconfig"
        )
        recorder = phases.Recorder(live.api, workload_namespace()).start()
        try:
            yield (
                live.admin_kubeconfig,
                kubeconfig,
                lambda job, ns: workload.submit(live.api, job, ns, compression),
            )
        finally:
            recorder.stop()
            launched = {i["id"]: t for g in live.agent.cloud.list_groups() for i in g.get("instances", ())
                        if (t := phases.epoch(i.get("launched_at"))) is not None}  # fmt: skip
            recorder.save(out / "phases.json", launched, phases.scale_ups(out / "autoscaler.log"),
                          list(live.agent.syncs), phases.passes(out / "autoscaler.log"))  # fmt: skip


def workload_namespace() -> str:
    from simulator.workload import NAMESPACE

    return NAMESPACE


def main(spec: str | None = None, out: str | None = None, compression: float | str | None = None,
         hold: bool = False) -> sim_vs_real.Comparison:  # fmt: skip
    """The demo at ``compression`` model seconds per wall second (default ``COMPRESSION``; bad values: one line,
    exit status 2, before anything starts), then the simulator's replay of its bursts beside it. ``hold``: every
    figure of the comparison (nodes bought, each burst's decision and its wait to every pod running) held to
    demos/sim_vs_real.py's tolerance, DemoFailed (exit status 1) beyond it."""
    rate = parse_compression(compression)
    spec_doc = load_spec(spec)  # a bad spec is one line before the stack starts too
    try:
        summary = run_demo(spec, out or "build/demo", cluster=real_cluster, compression=rate)
    except (ChildError, StackFailed) as e:
        raise DemoFailed(str(e)) from None
    doc = phases.read(out or "build/demo")
    compared = sim_vs_real.check(
        spec_doc,
        summary["group_nodes_seen"],
        [seconds * rate for seconds in summary["waves"].values()],
        rate,
        SCAN_INTERVAL_S,
        phases.to_passes(doc, rate) if doc else None,
    )
    for line in [*compared.lines(), *(phases.burst_table(doc, phases.BURSTS, rate) if doc else [])]:
        print(line, flush=True)
    if hold and not compared.agrees:
        raise DemoFailed(
            f"at {rate:g}x the simulator and the real stack disagree: " + "; ".join(compared.problems)
        )
    return compared


def cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m demos.cluster", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--spec", help="path of the cluster spec (default: cluster.yaml)")
    ap.add_argument("--out", help="logs, plot and phases.json (default: build/demo)")
    ap.add_argument(
        "--compression", help=f"model seconds per wall second, at least 1 (default {COMPRESSION:g})"
    )
    ap.add_argument("--hold", action="store_true",
                    help="exit 1 unless nodes, decisions and waits agree with the simulator (demos/sim_vs_real.py)")  # fmt: skip
    args = ap.parse_args(argv)
    try:
        main(args.spec, args.out, args.compression, args.hold)
    except UserError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(cli())
