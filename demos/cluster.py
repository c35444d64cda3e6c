"""``make demo`` (``invoke demo``): the autoscaler's demo on a cluster set up as `invoke up` sets one up.

The Kubernetes side is real (localcluster/): etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
the gang scheduler built from pinned Go modules by `make tools`, kwok for the nodes' heartbeats and pods, and the
node agent registering the embedded AWS's instances as Nodes; what `invoke up` deploys (localcluster/day_one.py)
is applied with kubectl and a refusal fails the demo with the API server's message; the autoscaler runs as its
ServiceAccount."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from clusterspec.loader import load_spec
from clusterspec.names import AUTOSCALER_NAMESPACE
from demos import phases, sim_vs_real
from demos.autoscaler_demo.processes import ChildError
from demos.autoscaler_demo.run import COMPRESSION, SCAN_INTERVAL_S, DemoFailed, run_demo
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


def main(spec: str | None = None, out: str | None = None) -> None:
    try:
        summary = run_demo(spec, out or "build/demo", cluster=real_cluster)
    except (ChildError, StackFailed) as e:
        raise DemoFailed(str(e)) from None
    doc = phases.read(out or "build/demo")
    compared = sim_vs_real.check(
        load_spec(spec),
        summary["group_nodes_seen"],
        [seconds * COMPRESSION for seconds in summary["waves"].values()],
        COMPRESSION,
        SCAN_INTERVAL_S,
        phases.to_passes(doc, COMPRESSION) if doc else None,
    )
    for line in [*compared.lines(), *(phases.burst_table(doc, phases.BURSTS, COMPRESSION) if doc else [])]:
        print(line, flush=True)
