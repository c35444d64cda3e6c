"""Benchmark: the emulator under the official client. Prints figures; asserts nothing.

    python -m autoscaler.emulator.bench [--nodes 200] [--pods 2000]

Measures a full pod list (one page and pages of 500), node patches per second, and the delay from a
change in the model to its event on a watch.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time

from kubernetes import client, config, watch

from autoscaler.emulator.server import Emulator
from autoscaler.model import DURATION_ANNOTATION, ClusterModel, VirtualClock


def _pod(i: int) -> dict:
    return {
        "metadata": {"name": f"p{i}", "namespace": "research", "annotations": {DURATION_ANNOTATION: "3600"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": "1"}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    }


def _timed(fn, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=2000)
    args = ap.parse_args(argv)
    group = {"name": "g", "region": "us-west-2", "instance_type": "p3.16xlarge", "min": 0,
             "max": args.nodes, "desired": args.nodes}  # fmt: skip
    model = ClusterModel(VirtualClock(), [group])
    for i in range(args.pods):
        model.submit_pod(_pod(i))
    model.settle()
    with Emulator(model) as emu, tempfile.TemporaryDirectory() as tmp:
        core = client.CoreV1Api(config.new_client_from_config(str(emu.write_kubeconfig(f"{tmp}/kc"))))
        one = _timed(lambda: core.list_pod_for_all_namespaces(_preload_content=False).read())

        def paged():
            token = None
            while True:
                page = core.list_pod_for_all_namespaces(limit=500, _continue=token)
                token = page.metadata._continue
                if not token:
                    return

        pages = _timed(paged, 3)
        names = [n["metadata"]["name"] for n in model.nodes()]
        t = time.perf_counter()
        for i, name in enumerate(names[:100]):
            core.patch_node(name, {"metadata": {"annotations": {"bench": str(i)}}})
        patches = 100 / (time.perf_counter() - t)
        rv = core.list_node(limit=1).metadata.resource_version
        delays: list[float] = []
        sent: dict[str, float] = {}

        def change():
            time.sleep(0.3)
            for name in names[:20]:
                with model.lock:
                    sent[name] = time.perf_counter()
                    model.annotate_node(name, {"ping": "1"})
                time.sleep(0.02)

        threading.Thread(target=change, daemon=True).start()
        for ev in watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=3):
            name = ev["object"].metadata.name
            if name in sent and (ev["object"].metadata.annotations or {}).get("ping"):
                delays.append(time.perf_counter() - sent.pop(name))
            if len(delays) == 20:
                break
    print(f"cluster: {args.nodes} nodes, {args.pods} pods")
    print(f"list all pods, one response (raw): {one * 1000:.0f} ms")
    print(f"list all pods in pages of 500 (deserialized): {pages * 1000:.0f} ms")
    print(f"node patches (strategic merge) per second: {patches:.0f}")
    print(f"watch delay, model change to client event: median {statistics.median(delays) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
