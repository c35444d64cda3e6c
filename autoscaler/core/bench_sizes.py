"""The planner at real object sizes: one generated burst written twice, with lean pods and nodes (only what the
planner reads) and kubectl-sized ones (``kubectl_sized``), and for each file

- the whole process: ``python -m autoscaler plan FILE --json`` (start-up, decoding, parse, plan, output): wall
  time, CPU time and peak RSS (the child's own ``ru_maxrss`` from ``wait4``);
- in-core: a driver process decodes the file as its tree's code does (``autoscaler.core.decode.snapshot``, the
  lean objects its informers keep, where the tree has it; else stdlib ``json``; not timed), then times ``parse_snapshot(data)`` and
  ``plan(snap, PlannerConfig())`` twice (cold: a one-shot ``autoscaler plan``; warm: a running controller's
  next pass, shape and quantity caches filled), and reports its peak RSS (``VmHWM``) and its RSS once the file
  is decoded.

``baseline``: the same processes run on another checkout of the code (``git archive REF``) with the same input
files, in the same run, so figures become ratios that do not depend on how busy the machine is. The driver uses
only ``parse_snapshot``, ``plan`` and ``PlannerConfig()``, which both trees have.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autoscaler.core import generate, kubectl_sized
from autoscaler.core.names import NODE_GROUP_LABEL

ROOT = Path(__file__).resolve().parents[2]
TARGET_PROCESS_S = 2.0
TARGET_IN_CORE_S = 0.5
SIZES = ("lean", "kubectl")

DRIVER = r"""
import hashlib, json, sys, time

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0

from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot

try:  # the tree's own snapshot decoder (lean objects, as its informers keep them); else the standard library
    from autoscaler.core.decode import snapshot as decode
except ImportError:
    decode = json.loads

t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    data = decode(f.read())
out = {"decode_s": time.perf_counter() - t, "rss_decoded": status("VmRSS")}
config = PlannerConfig()
for run in ("cold", "warm"):
    w0, c0 = time.perf_counter(), time.process_time()
    snap = parse_snapshot(data)
    c1 = time.process_time()
    result = plan(snap, config)
    w2, c2 = time.perf_counter(), time.process_time()
    out[run] = {"parse_cpu_s": c1 - c0, "plan_cpu_s": c2 - c1, "wall_s": w2 - w0}
    scale_up = dict(result.scale_up)
    del snap, result
out["peak_rss"] = status("VmHWM")
out["scale_up"] = hashlib.sha256(json.dumps(scale_up, sort_keys=True).encode()).hexdigest()[:12]
out["new_nodes"] = sum(scale_up.values())
print(json.dumps(out))
"""


def write_inputs(directory: Path, pods: int, nodes: int, seed: int = 1) -> dict[str, dict]:
    """The burst as ``lean.json`` and ``kubectl.json`` in ``directory``; per size its path, file and object sizes.
    Pods are written one at a time, so the kubectl-sized snapshot is never whole in memory."""
    lean = generate.snapshot(pods=pods, shape_count=4, nodes=nodes, seed=seed)
    out = {}
    for size in SIZES:
        path = directory / f"{size}.json"
        pod_bytes = node_bytes = 0
        rng = random.Random(seed)
        types = {g["name"]: g["instance_type"] for g in lean["groups"]}
        with path.open("w") as f:
            head = {k: v for k, v in lean.items() if k not in ("nodes", "pods")}
            f.write(json.dumps(head)[:-1] + ', "nodes": [')
            for i, n in enumerate(lean["nodes"]):
                obj = (
                    n
                    if size == "lean"
                    else kubectl_sized.node(
                        n, i, rng, types.get(n["metadata"]["labels"].get(NODE_GROUP_LABEL))
                    )
                )
                text = json.dumps(obj, separators=(",", ":"))
                node_bytes += len(text)
                f.write(("," if i else "") + text)
            f.write('], "pods": [')
            for i, p in enumerate(lean["pods"]):
                text = json.dumps(
                    p if size == "lean" else kubectl_sized.pod(p, i, rng), separators=(",", ":")
                )
                pod_bytes += len(text)
                f.write(("," if i else "") + text)
            f.write("]}\n")
        out[size] = {
            "path": str(path),
            "file_mib": round(path.stat().st_size / 2**20, 1),
            "pod_bytes": round(pod_bytes / max(1, len(lean["pods"]))),
            "node_bytes": round(node_bytes / max(1, len(lean["nodes"]))),
        }
    pending = sum(1 for p in lean["pods"] if not p["spec"].get("nodeName"))
    for size in SIZES:
        out[size] |= {"pending": pending, "pods": len(lean["pods"]), "nodes": len(lean["nodes"])}
    return out


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    return env


def _wait(argv: list[str], tree: Path) -> tuple[float, float, int, str]:
    """Run ``argv`` in ``tree``; (wall s, CPU s, peak RSS bytes, stdout) of that one child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=tree, env=_env(tree), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, error = out.read().decode(), err.read().decode(errors="replace")
    if proc.returncode != 0:
        last = (error.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{' '.join(argv[1:4])} in {tree} exited with {proc.returncode}: {last}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, text


def measure(path: str, tree: Path = ROOT) -> dict:
    """The whole-process and in-core figures for one snapshot file, with the code in ``tree``."""
    wall, cpu, peak, text = _wait([sys.executable, "-m", "autoscaler", "plan", path, "--json"], tree)
    scale_up = json.loads(text).get("scale_up") or {}
    _, _, _, core = _wait([sys.executable, "-c", DRIVER, path], tree)
    got = json.loads(core)
    mib = 2**20
    return {
        "process_wall_s": round(wall, 2),
        "process_cpu_s": round(cpu, 2),
        "process_peak_mib": round(peak / mib),
        "decode_s": round(got["decode_s"], 2),
        "in_core_cold_s": round(got["cold"]["parse_cpu_s"] + got["cold"]["plan_cpu_s"], 3),
        "in_core_warm_s": round(got["warm"]["parse_cpu_s"] + got["warm"]["plan_cpu_s"], 3),
        "parse_warm_s": round(got["warm"]["parse_cpu_s"], 3),
        "plan_warm_s": round(got["warm"]["plan_cpu_s"], 3),
        "in_core_peak_mib": round(got["peak_rss"] / mib),
        "decoded_mib": round(got["rss_decoded"] / mib),
        "new_nodes": got["new_nodes"],
        "plan_digest": got["scale_up"],
        "process_plan_digest": hashlib.sha256(json.dumps(scale_up, sort_keys=True).encode()).hexdigest()[:12],
    }


@contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """The tree of ``ref`` in a temporary directory (``git archive``; the repository is not touched), compiled."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        raise ValueError(f"--baseline {ref}: not a commit of this repository ({ROOT})") from None
    tmp = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    try:
        archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True,
                                 check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        compile_tree(tmp)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compile_tree(tree: Path) -> None:
    """Byte-compile the package, so neither tree pays for compiling in its timed start-up."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "autoscaler")], check=False,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def resolve(ref: str) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True,
                         text=True, check=False)  # fmt: skip
    return out.stdout.strip() or ref


def run(
    pods: int, nodes: int, baseline: str | None = None, progress=lambda what: None, repeat: int = 1
) -> dict:
    """Every figure, for both sizes, for this tree and (with ``baseline``) the baseline's, same inputs; with
    ``repeat``, each figure is the least of that many runs (the runs of the two trees alternate)."""
    with tempfile.TemporaryDirectory(prefix="bench-sizes-") as tmp:
        progress(f"writing the {pods:,}-pod snapshot, lean and kubectl-sized")
        inputs = write_inputs(Path(tmp), pods, nodes)
        compile_tree(ROOT)
        rows = []
        trees = [("current", ROOT)]
        with checkout(baseline) if baseline else _none() as base:
            if base is not None:
                trees.append((f"baseline {resolve(baseline)}", base))
            for size in SIZES:
                got: dict[str, list[dict]] = {label: [] for label, _ in trees}
                for i in range(repeat):
                    for label, tree in trees:
                        progress(
                            f"{size} objects, {label} code"
                            + (f", run {i + 1}/{repeat}" if repeat > 1 else "")
                        )
                        got[label].append(measure(inputs[size]["path"], tree))
                for label, _ in trees:
                    row = {"size": size, "code": label} | {
                        k: v for k, v in inputs[size].items() if k != "path"
                    }
                    rows.append(row | least(got[label]))
    return {"rows": rows, "ratios": ratios(rows) if baseline else []}


def least(runs: list[dict]) -> dict:
    """Per figure the least over the runs (noise from other processes only ever adds); digests as they are."""
    out = dict(runs[0])
    for k, v in out.items():
        if isinstance(v, int | float) and not isinstance(v, bool) and k != "new_nodes":
            out[k] = min(r[k] for r in runs)
    out["runs"] = len(runs)
    return out


@contextmanager
def _none() -> Iterator[None]:
    yield None


RATIO_FIELDS = ("process_wall_s", "process_cpu_s", "process_peak_mib", "in_core_cold_s", "in_core_warm_s",
                "in_core_peak_mib")  # fmt: skip


def ratios(rows: list[dict]) -> list[dict]:
    """Per size, current / baseline for each figure (below 1: the current code is faster or smaller)."""
    out = []
    for size in SIZES:
        cur = next((r for r in rows if r["size"] == size and r["code"] == "current"), None)
        base = next((r for r in rows if r["size"] == size and r["code"] != "current"), None)
        if cur and base:
            out.append(
                {"size": size} | {f: round(cur[f] / base[f], 2) if base[f] else None for f in RATIO_FIELDS}
            )
    return out


def table(result: dict) -> str:
    head = ("| objects | code | pods (pending) | nodes | bytes/pod | bytes/node | file MiB | whole process s (CPU s) "
            "| process peak MiB | in-core cold s | in-core warm s (parse + plan) | in-core peak MiB (decoded) "
            "| new nodes |")  # fmt: skip
    lines = [head, "|" + "---|" * 13]
    for r in result["rows"]:
        lines.append(
            f"| {r['size']} | {r['code']} | {r['pods']:,} ({r['pending']:,}) | {r['nodes']:,} | {r['pod_bytes']:,} "
            f"| {r['node_bytes']:,} | {r['file_mib']} | {r['process_wall_s']} ({r['process_cpu_s']}) "
            f"| {r['process_peak_mib']:,} | {r['in_core_cold_s']} | {r['in_core_warm_s']} ({r['parse_warm_s']} + "
            f"{r['plan_warm_s']}) | {r['in_core_peak_mib']:,} ({r['decoded_mib']:,}) | {r['new_nodes']:,} |"
        )
    if result["ratios"]:
        lines += ["", "| objects | " + " | ".join(f"{f} new/baseline" for f in RATIO_FIELDS) + " |",
                  "|" + "---|" * (len(RATIO_FIELDS) + 1)]  # fmt: skip
        for r in result["ratios"]:
            lines.append(f"| {r['size']} | " + " | ".join(str(r[f]) for f in RATIO_FIELDS) + " |")
    return "\n".join(lines)


def verdicts(result: dict) -> list[str]:
    """One line per size for the current code against the targets (kubectl-sized objects are what they are for)."""
    out = []
    for r in result["rows"]:
        if r["code"] != "current":
            continue
        p = "meets" if r["process_wall_s"] < TARGET_PROCESS_S else "MISSES"
        c = "meets" if r["in_core_cold_s"] < TARGET_IN_CORE_S else "MISSES"
        w = "meets" if r["in_core_warm_s"] < TARGET_IN_CORE_S else "MISSES"
        out.append(
            f"{r['size']} objects, {r['pending']:,} pending pods: whole process {r['process_wall_s']} s {p} the "
            f"{TARGET_PROCESS_S:g} s target; in-core {r['in_core_cold_s']} s cold {c} and {r['in_core_warm_s']} s "
            f"warm {w} the {TARGET_IN_CORE_S:g} s target; peak RSS {r['process_peak_mib']:,} MiB"
        )
    digests = {r["plan_digest"] for r in result["rows"]} | {r["process_plan_digest"] for r in result["rows"]}
    out.append("plans: " + ("the same scale-up in every run" if len(digests) == 1 else "DIFFER between runs"))
    return out
