"""Properties of any plan, checked against an independent reading of the snapshot: no node over capacity, no
group over its max, every placed pod's constraints hold on its node, gangs whole and in one region, every
pending pod either placed or reported, and the same plan again from the same snapshot."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given
from kubernetes.utils.quantity import parse_quantity

from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.autoscaler.core.strategies import PROPERTIES, snapshots


def _requests(pod: dict) -> dict:
    out: dict = defaultdict(int)
    for c in pod["spec"]["containers"]:
        for r, q in c["resources"]["requests"].items():
            out[r] += parse_quantity(q)
    out["pods"] += 1
    return out


def _targets(data: dict) -> dict[str, dict]:
    """What each placement target is: labels, taints, allocatable and region."""
    groups = {g["name"]: g for g in data["groups"]}
    out = {}
    for n in data["nodes"]:
        g = groups[n["metadata"]["labels"]["research.cluster/node-group"]]
        out[n["metadata"]["name"]] = {
            "labels": n["metadata"]["labels"],
            "taints": n["spec"]["taints"],
            "allocatable": n["status"]["allocatable"],
            "region": g["region"],
            "group": g["name"],
        }
    for g in data["groups"]:
        for kind in ("new", "upcoming"):
            out[f"{kind}:{g['name']}"] = {
                "labels": g["labels"],
                "taints": g["taints"],
                "allocatable": g["allocatable"],
                "region": g["region"],
                "group": g["name"],
            }
    return out


def _target(targets: dict, where: str) -> dict:
    return targets[where] if where in targets else targets[where.rsplit(":", 1)[0]]


@PROPERTIES
@given(snapshots())
def test_plan_properties(data: dict) -> None:
    config = PlannerConfig(max_new_nodes_per_loop=8)
    snapshot = parse_snapshot(data)
    result = plan(snapshot, config)
    # pure: planning the same snapshot again gives the same plan (nothing in the snapshot was changed)
    assert plan(snapshot, config).to_dict(placements=True) == result.to_dict(placements=True)
    pods = {f"lab/{p['metadata']['name']}": p for p in data["pods"]}
    targets = _targets(data)
    on: dict[str, list[dict]] = defaultdict(list)
    for p in data["pods"]:
        if p["spec"].get("nodeName"):
            on[p["spec"]["nodeName"]].append(p)
    for key, where in result.placements.items():
        on[where].append(pods[key])

    # every pending pod is placed or reported, never both
    pending = {k for k, p in pods.items() if not p["spec"].get("nodeName")}
    reported = [u["pod"] for u in result.unschedulable]
    assert len(reported) == len(set(reported))
    assert set(result.placements) | set(reported) == pending
    assert not set(result.placements) & set(reported)

    for where, placed in on.items():
        t = _target(targets, where)
        used: dict = defaultdict(int)
        for p in placed:
            for r, q in _requests(p).items():
                used[r] += q
        for r, q in used.items():
            assert q <= parse_quantity(t["allocatable"].get(r, "0")), f"{where} over capacity in {r}"
        ports = [p for p in placed if p["spec"]["containers"][0].get("ports")]
        assert len(ports) <= 1, f"{where}: host port 8080 used twice"
        solo = [p for p in placed if p["metadata"]["labels"].get("app") == "solo"]
        assert len(solo) <= 1, f"{where}: anti-affinity broken"
        spread = [p for p in placed if p["metadata"]["labels"].get("app") == "spread"]
        if len(spread) > 2:
            # the scheduler's rule (podtopologyspread): count + 1 - minimum over the counted nodes <= maxSkew; a
            # node of the snapshot that a placed pod may use (its nodeSelector: nodeAffinityPolicy Honor) and
            # that ends with no spread pod kept the minimum at 0 all along, so no node may hold more than 2
            for p in spread:
                if p["spec"].get("nodeName"):
                    continue
                want = p["spec"].get("nodeSelector") or {}
                for n in data["nodes"]:
                    labels = n["metadata"].get("labels") or {}
                    if all(labels.get(k) == v for k, v in want.items()):
                        count = sum(
                            q["metadata"]["labels"].get("app") == "spread" for q in on[n["metadata"]["name"]]
                        )
                        assert count > 0, (
                            f"{where}: hostname spread (maxSkew 2) broken: {n['metadata']['name']} has none"
                        )
        for p in placed:
            if p["spec"].get("nodeName"):
                continue
            for k, v in (p["spec"].get("nodeSelector") or {}).items():
                assert t["labels"].get(k) == v, f"{where}: nodeSelector of {p['metadata']['name']}"
            if t["taints"]:
                assert p["spec"].get("tolerations"), f"{where}: untolerated taint for {p['metadata']['name']}"

    # groups: never over max, new nodes as many as the placements use at most
    new_used: dict[str, set] = defaultdict(set)
    for where in result.placements.values():
        if where.startswith("new:"):
            new_used[where.split(":")[1]].add(where)
    for g in data["groups"]:
        desired = result.desired.get(g["name"], g["desired"])
        assert desired <= g["max"]
        assert len(new_used[g["name"]]) <= result.scale_up.get(g["name"], 0)
    assert sum(result.scale_up.values()) <= config.max_new_nodes_per_loop

    # gangs: all or nothing, one region
    gangs: dict[str, list[str]] = defaultdict(list)
    for key, p in pods.items():
        gang = p["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group")
        if gang:
            gangs[gang].append(key)
    for members in gangs.values():
        placed = [m for m in members if m in result.placements]
        assert len(placed) in (0, len(members))
        regions = {_target(targets, result.placements[m])["region"] for m in placed}
        assert len(regions) <= 1
