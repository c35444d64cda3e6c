"""Decoding benchmark (docs/benchmarks.md, "Decoding"): a generated snapshot of N pending pods whose objects are
inflated to what a real API server returns (inflate.py), decoded by each candidate, then parsed and planned.

    .venv/bin/python -m tests.autoscaler.core.bench_decode [--pods 51000] [--baseline DIR]

Prints CPU seconds (best of --repeat) per step, the Python memory the decoded document holds, and the whole
``autoscaler plan FILE --json`` process (wall and CPU), also for the code in DIR (e.g. an export of an earlier
commit: ``git archive COMMIT autoscaler | tar -x -C DIR``) when given. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc

import msgspec

from autoscaler.core import decode, generate
from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.autoscaler.core import inflate


def _cpu(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        out = None
        gc.collect()
        gc.disable()
        try:
            t = time.process_time()
            out = fn()
            best = min(best, time.process_time() - t)
        finally:
            gc.enable()
    return best, out


def _held(fn) -> float:
    gc.collect()
    tracemalloc.start()
    out = fn()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return held / 2**20


def _process(path: str, pythonpath: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autoscaler", "plan", path, "--json"], capture_output=True, env=env,
                          check=False, cwd=tempfile.gettempdir())  # fmt: skip
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode()[-2000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=51_000)
    ap.add_argument("--nodes", type=int, default=3_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", metavar="DIR", help="also time `autoscaler plan` with the package in DIR")
    ap.add_argument(
        "--informer", action="store_true", help="only the informers' cache memory, lean and whole"
    )
    args = ap.parse_args()
    if args.informer:
        informer_memory(args.pods, args.nodes)
        return
    data = generate.snapshot(pods=args.pods, shape_count=4, nodes=args.nodes, seed=1)
    for g in data["groups"]:
        g["max"] = max(g["max"], 100_000)
    big = inflate.snapshot(data)
    raw = json.dumps(big).encode()
    del big
    n = len(data["pods"])
    print(f"snapshot: {n:,} pods ({args.pods:,} pending), {len(data['nodes']):,} nodes, {len(raw) / 2**20:.0f} MiB "
          f"of JSON ({len(raw) // n:,} bytes a pod on average)")  # fmt: skip
    decoders = {"json.loads (stdlib)": json.loads, "msgspec untyped": msgspec.json.decode}
    try:
        import orjson

        decoders["orjson.loads"] = orjson.loads
    except ImportError:
        pass
    decoders["msgspec typed, lean (decode.snapshot)"] = decode.snapshot
    print("| decoder | decode CPU s | held MiB | parse CPU s | plan CPU s | in-core CPU s |")
    print("|---|---|---|---|---|---|")
    config = PlannerConfig()
    for name, fn in decoders.items():
        t_dec, doc = _cpu(lambda fn=fn, raw=raw: fn(raw), args.repeat)
        t_parse, snap = _cpu(lambda doc=doc: parse_snapshot(doc), args.repeat)
        t_plan, _ = _cpu(lambda snap=snap: plan(snap, config), args.repeat)
        del doc, snap
        held = _held(lambda fn=fn, raw=raw: fn(raw))
        print(
            f"| {name} | {t_dec:.2f} | {held:,.0f} | {t_parse:.3f} | {t_plan:.3f} | {t_parse + t_plan:.3f} |"
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snapshot.json")
        with open(path, "wb") as f:
            f.write(raw)
        del raw
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        runs = [("this tree", here)] + (
            [("baseline " + args.baseline, args.baseline)] if args.baseline else []
        )
        for label, pythonpath in runs:
            times = [_process(path, pythonpath) for _ in range(args.repeat)]
            wall, cpu = min(t[0] for t in times), min(t[1] for t in times)
            print(f"autoscaler plan --json, whole process ({label}): {wall:.2f} s wall, {cpu:.2f} s CPU (best of "
                  f"{args.repeat})")  # fmt: skip


def informer_memory(pods: int, nodes: int) -> None:
    """Python memory held by the pod and node informers' caches after a list of inflated objects (pages of 500
    as the API server sends them), lean (the default) and whole (``lean_objects=False``)."""
    from types import SimpleNamespace

    from autoscaler.adapters.informer import Informer

    data = generate.snapshot(pods=pods, shape_count=4, nodes=nodes, seed=1)
    objs = {"Pod": data["pods"], "Node": data["nodes"]}
    pages = {}
    for kind, fn in (("Pod", inflate.pod), ("Node", inflate.node)):
        items = objs[kind]
        pages[kind] = [
            json.dumps({"metadata": {"resourceVersion": "1", "continue": str(i + 500) if i + 500 < len(items) else None},
                        "items": [fn(o, i + k) for k, o in enumerate(items[i : i + 500])]}).encode()
            for i in range(0, len(items), 500)
        ]  # fmt: skip
    size = sum(len(p) for ps in pages.values() for p in ps)
    print(f"informer caches: {len(objs['Pod']):,} pods and {len(objs['Node']):,} nodes, {size / 2**20:.0f} MiB "
          "of list pages")  # fmt: skip
    for lean_objects in (False, True):
        held = 0.0
        for kind, ps in pages.items():

            def call(limit, _continue=None, ps=ps, **_):
                return SimpleNamespace(data=ps[int(_continue or 0) // 500])

            inf = Informer(kind, call, kind, "v1", lean_objects=lean_objects)
            gc.collect()
            tracemalloc.start()
            t = time.process_time()
            inf.sync()
            cpu = time.process_time() - t
            now, _ = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            held += now / 2**20
            print(f"  {kind:4} {'lean' if lean_objects else 'whole':5}: {now / 2**20:,.0f} MiB held, list decoded in "
                  f"{cpu:.2f} CPU s (under tracemalloc)")  # fmt: skip
            del inf
        print(f"  total {'lean' if lean_objects else 'whole'}: {held:,.0f} MiB")


if __name__ == "__main__":
    main()
