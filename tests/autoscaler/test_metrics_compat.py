"""The autoscaler's metrics under cluster-autoscaler's names (issue 16: existing dashboards and alerts did not
work). The recording rules and the dashboard in deploy/monitoring are checked by an oracle we did not write,
Prometheus' own promtool (rule syntax and lint, and a unit test of the recorded values), and against the
metrics the autoscaler really exports, so a renamed metric or a new node state cannot silently drop out."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from autoscaler import metrics
from autoscaler.core.nodestate import STATES
from tests.support import ROOT, load_yaml, require_tool

MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "cluster-autoscaler.rules.yaml"
# cluster-autoscaler's node states (clusterstate registry: ready, unready, notStarted, longUnregistered,
# unregistered); ours are all mapped onto these.
CA_NODE_STATES = {"ready", "unready", "notStarted", "longUnregistered", "unregistered"}
PROMQL_WORDS = {
    "sum",
    "max",
    "and",
    "or",
    "vector",
    "label_replace",
    "rate",
    "increase",
    "histogram_quantile",
}


def rules() -> list[dict]:
    return [r for g in load_yaml(RULES)["groups"] for r in g["rules"]]


def exported_names() -> set[str]:
    """Every series name /metrics serves (counters with _total, histograms with _bucket, _sum, _count)."""
    names = set()
    for family in metrics.REGISTRY.collect():
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        if family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_sum", "_count"))
    return names


def metric_names(expr: str) -> set[str]:
    no_strings = re.sub(r'"[^"]*"', '""', expr)
    no_labels = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\b(by|without|on|ignoring)\s*\([^)]*\)", "", no_strings)
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", no_labels)) - PROMQL_WORDS
    return {w for w in words if "_" in w}


def test_every_metric_a_rule_reads_is_one_the_autoscaler_exports():
    exported = exported_names()
    read = set().union(*(metric_names(r["expr"]) for r in rules()))
    assert read and read <= exported, read - exported


def test_every_node_state_maps_to_exactly_one_cluster_autoscaler_state():
    mapped: dict[str, str] = {}
    for rule in rules():
        if rule["record"] != "cluster_autoscaler_nodes_count":
            continue
        assert rule["labels"]["state"] in CA_NODE_STATES
        (states,) = re.findall(r'state=~"([^"]+)"', rule["expr"])
        for state in states.split("|"):
            assert state not in mapped, f"{state} counted twice"
            mapped[state] = rule["labels"]["state"]
    assert set(mapped) == set(STATES)


def test_the_dashboard_reads_only_recorded_names():
    recorded = {r["record"] for r in rules()}
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs and all(metric_names(e) <= recorded for e in exprs), exprs


@pytest.mark.tool
def test_promtool_accepts_the_rules_and_their_unit_test():
    promtool = require_tool("promtool")
    for args in (["check", "rules", RULES.name], ["test", "rules", "cluster-autoscaler.rules.test.yaml"]):
        done = subprocess.run([promtool, *args], cwd=MONITORING, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.tool
def test_promtool_parses_every_dashboard_query(tmp_path):
    promtool = require_tool("promtool")
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    as_rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries)]}]}  # fmt: skip
    (tmp_path / "dashboard.rules.yaml").write_text(yaml.safe_dump(as_rules))
    done = subprocess.run([promtool, "check", "rules", str(tmp_path / "dashboard.rules.yaml")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
