"""The planner against kube-scheduler on the real local control plane: does a scale-up buy what kube-scheduler
then uses, exactly?

One case (``tests/localcluster/differential_cases.yaml``): groups of the spec, some nodes already there, pods
(plain, or the pods of a gang with its PodGroup). The pods are created in a namespace of their own; once
kube-scheduler has said why it cannot place each one (PodScheduled False, or the gang scheduler's verdict), the
planner plans from the snapshot the autoscaler's own Kubernetes adapter builds of that API server. Every node the
plan buys then registers as its instance would (``nodes.node_body``: the group's labels and taints, allocatable
after the join's reservations, GPUs advertised, Ready; kwok keeps it), and kube-scheduler binds. The verdict
compares the two, pod by pod:

- *placed as planned*: the pod is bound to a node of the group the plan bought it a node in (or to the existing
  node the plan put it on);
- *elsewhere*: bound to a node of another group, or another existing node than planned;
- *never placed*: still pending once every bought node is Ready (the planner bought for a pod kube-scheduler
  does not place there: a predicate the planner lacks);
- *unplanned*: placed by kube-scheduler though the plan said it could not be (a predicate the planner has wrong);
- *idle purchases*: bought nodes that kube-scheduler left empty (the planner bought too much).

The comparison itself (:func:`compare`) is pure, so its cases are unit tests of their own; :func:`run` is the
part that talks to the API server. Every node and pod of a case carries a taint and toleration of its own
(``DIFFERENTIAL_TAINT`` = the namespace), so tests sharing the control plane never land on each other's nodes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from autoscaler.adapters.kubernetes import KubeCluster, api_client
from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from clusterspec.names import POD_GROUP_LABEL, POD_GROUP_SIZE_ANNOTATION
from clusterspec.scheduler import GANG_SCHEDULER, POD_GROUP_API
from localcluster import binaries
from localcluster.nodes import EFA, GPU, node_body
from localcluster.stack import KWOK_LABEL
from provision.scheduler import SCHEDULER_PLUGINS, gang_scheduler_config

DIFFERENTIAL_TAINT = "research.cluster/differential"
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Verdict:
    """Where the plan put each pod and where kube-scheduler bound it."""

    scale_up: dict[str, int]
    planned: dict[str, str]  # pod -> group (a new node) or node name (an existing one)
    unschedulable: dict[str, str]  # pod -> the planner's reason
    bound: dict[str, str]  # pod -> node
    as_planned: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)
    never_placed: list[str] = field(default_factory=list)
    unplanned: list[str] = field(default_factory=list)
    idle_purchases: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not (self.elsewhere or self.never_placed or self.unplanned or self.idle_purchases)

    def lines(self) -> list[str]:
        out = [
            f"bought {json.dumps(self.scale_up, sort_keys=True)}; {len(self.as_planned)} of "
            f"{len(self.planned) + len(self.unschedulable)} pods placed as planned"
        ]
        out += [f"elsewhere: {x}" for x in self.elsewhere]
        out += [f"never placed: {x}" for x in self.never_placed]
        out += [f"unplanned: {x}" for x in self.unplanned]
        out += [f"idle purchase: {x}" for x in self.idle_purchases]
        return out


def planned_groups(placements: dict[str, str]) -> dict[str, str]:
    """The plan's placements (``new:<group>:<i>``, ``upcoming:<group>:<i>``, or a node name) as group or node."""
    return {
        pod: where.split(":", 2)[1] if where.startswith(("new:", "upcoming:")) else where
        for pod, where in placements.items()
    }


def compare(
    scale_up: dict[str, int],
    placements: dict[str, str],
    unschedulable: dict[str, str],
    bound: dict[str, str],
    node_group: dict[str, str],
    bought: dict[str, str],
) -> Verdict:
    """The verdict. ``bound``: pod -> node kube-scheduler bound it to (pods still pending absent); ``node_group``:
    node -> its group label; ``bought``: the nodes registered for the plan's purchase -> their group."""
    planned = planned_groups(placements)
    v = Verdict(dict(scale_up), planned, dict(unschedulable), dict(bound))
    for pod, want in sorted(planned.items()):
        node = bound.get(pod)
        if node is None:
            v.never_placed.append(f"{pod} (planned on {want})")
            continue
        got = node_group.get(node)
        if want == node or (node in bought and got == want):
            v.as_planned.append(pod)
        else:
            v.elsewhere.append(f"{pod}: planned on {want}, bound to {node} (group {got or '-'})")
    for pod, why in sorted(unschedulable.items()):
        if pod in bound:
            v.unplanned.append(f"{pod}: the planner said {why!r}; kube-scheduler bound it to {bound[pod]}")
    used = set(bound.values())
    v.idle_purchases = [f"{n} ({g})" for n, g in sorted(bought.items()) if n not in used]
    return v


# -- on the API server ------------------------------------------------------------------------------------------


def _tainted(group: dict, ns: str) -> dict:
    """The group as the case sees it: its nodes labelled and tainted for the case alone."""
    taint = {"key": DIFFERENTIAL_TAINT, "value": ns, "effect": "NoSchedule"}
    return {**group, "labels": {**(group.get("labels") or {}), DIFFERENTIAL_TAINT: ns},
            "taints": [*(group.get("taints") or ()), taint]}  # fmt: skip


def _ready_node(group: dict, instance_id: str, ns: str) -> dict:
    """The node an instance of ``group`` registers, Ready and advertising its GPUs and EFA as once its device
    plugins run (the steps before that are the node agent's, localcluster/nodes.py; kwok keeps it Ready)."""
    body = node_body(group, instance_id, (group.get("zones") or [""])[0], uninitialized=False)
    body["metadata"]["labels"][KWOK_LABEL] = "fake"
    extra = {r: q for r, q in (group.get("allocatable") or {}).items() if r in (GPU, EFA)}
    for key in ("capacity", "allocatable"):
        body["status"][key].update(extra)
    body["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    ]
    return body


def case_pods(case: dict, ns: str, gang_scheduler: str = GANG_SCHEDULER) -> list[dict]:
    """The case's pods (and the PodGroups of its gangs), each tolerating the case's taint; a gang's pods carry
    the PodGroup label and its size (as `lab` labels them) and go to ``gang_scheduler``."""
    out: list[dict] = []
    for spec in case.get("pods") or ():
        gang = spec.get("gang")
        if gang:
            out.append({"apiVersion": POD_GROUP_API, "kind": "PodGroup",
                        "metadata": {"name": spec["name"], "namespace": ns},
                        "spec": {"minMember": int(spec.get("count", 1))}})  # fmt: skip
        for i in range(int(spec.get("count", 1))):
            requests = {k: str(v) for k, v in (spec.get("requests") or {}).items()}
            pod: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{spec['name']}-{i}", "namespace": ns,
                             "labels": {POD_GROUP_LABEL: spec["name"]} if gang else {},
                             "annotations": {POD_GROUP_SIZE_ANNOTATION: str(spec.get("count", 1))} if gang else {}},
                "spec": {
                    "schedulerName": gang_scheduler if gang else "default-scheduler",
                    "tolerations": [{"key": DIFFERENTIAL_TAINT, "operator": "Equal", "value": ns,
                                     "effect": "NoSchedule"}, *(spec.get("tolerations") or ())],
                    "nodeSelector": {**(spec.get("node_selector") or {}), DIFFERENTIAL_TAINT: ns},
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": requests, "limits": {
                                        k: v for k, v in requests.items() if k in (GPU, EFA)}}}],
                },
            }  # fmt: skip
            if spec.get("affinity"):
                pod["spec"]["affinity"] = spec["affinity"]
            if spec.get("topology_spread"):
                pod["spec"]["topologySpreadConstraints"] = [
                    {**c, "labelSelector": {"matchLabels": {"differential-spread": spec["name"]}}}
                    for c in spec["topology_spread"]
                ]
                pod["metadata"]["labels"]["differential-spread"] = spec["name"]
            out.append(pod)
    return out


def _daemonset_pod(pod: dict) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences") or ())


def _pods(kube, ns: str) -> list[dict]:
    return json.loads(kube.kubectl("-n", ns, "get", "pods", "-o", "json", check=True).stdout)["items"]


def _verdicts_given(pod: dict) -> bool:
    """kube-scheduler (or the gang scheduler) has tried the pod and said why it cannot place it."""
    if (pod.get("spec") or {}).get("nodeName"):
        return True
    conds = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conds)


def _wait(what: str, check, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def start_gang_scheduler(kube, folder: Path, name: str) -> subprocess.Popen:
    """A gang scheduler of its own (scheduler-plugins, the configuration as deployed, provision/scheduler.py)
    for ``name``'s pods on the shared control plane: its profile renamed, no leader election and no serving port,
    so one per test process runs beside the others. The caller stops it."""
    # the release built by localcluster/go/scheduler-plugins (the gang scheduler of a 1.35 cluster)
    crd = ROOT / "deploy/scheduler/crds" / SCHEDULER_PLUGINS["1.35"] / "scheduling.x-k8s.io_podgroups.yaml"
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd), check=True)
    config = gang_scheduler_config()
    config["leaderElection"] = {"leaderElect": False}
    config["clientConnection"] = {"kubeconfig": str(kube.admin_kubeconfig)}
    config["profiles"][0]["schedulerName"] = name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    log = (folder / f"{name}.log").open("ab")
    return subprocess.Popen([str(binaries.path("scheduler")), f"--config={path}", "--secure-port=0"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


def run(kube, case: dict, groups: list[dict], config: PlannerConfig | None = None,
        settle_s: float = 60.0, gang_scheduler: str = GANG_SCHEDULER) -> Verdict:  # fmt: skip
    """The case on the control plane ``kube`` (localcluster.shared.Cluster); returns the verdict. The case's
    namespace and nodes are deleted afterwards."""
    ns = kube.namespace("diff")
    groups = [_tainted(g, ns) for g in groups]
    by_name = {g["name"]: g for g in groups}
    created: list[str] = []
    serial = iter(range(1, 10_000))

    def register(group: dict) -> str:
        iid = f"i-0d{abs(hash((ns, group['name']))) % 10**6:06x}{next(serial):09x}"[:19]
        body = _ready_node(group, iid, ns)
        kube.kubectl("create", "-f", "-", input=json.dumps(body), check=True)
        created.append(body["metadata"]["name"])
        return body["metadata"]["name"]

    try:
        existing = {}
        for e in case.get("existing") or ():
            for _ in range(int(e.get("count", 1))):
                existing[register(by_name[e["group"]])] = e["group"]
        objects = case_pods(case, ns, gang_scheduler)
        kube.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
                     check=True)  # fmt: skip
        names = [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"]
        _wait("kube-scheduler's first verdict on every pod",
              lambda: (ps := _pods(kube, ns)) and len(ps) == len(names) and all(map(_verdicts_given, ps)),
              60)  # fmt: skip
        cluster = KubeCluster(api_client(str(kube.admin_kubeconfig)))
        cluster.sync()
        # the case's pods, and every DaemonSet's (the planner learns the room DaemonSets take on a new node from
        # their pods, as the controller's snapshot holds them)
        pods = [p for p in cluster.list_pods() if p["metadata"].get("namespace") == ns or _daemonset_pod(p)]
        nodes = [n for n in cluster.list_nodes() if n["metadata"]["name"] in existing]
        snapshot = {"pods": pods, "nodes": nodes,
                    "groups": [{**g, "desired": sum(1 for x in existing.values() if x == g["name"]),
                                "min": 0} for g in groups],
                    **cluster.list_storage()}  # fmt: skip
        planned = plan(parse_snapshot(snapshot), config or PlannerConfig()).to_dict(placements=True)
        bought = {register(by_name[g]): g for g, n in sorted(planned["scale_up"].items()) for _ in range(n)}
        want = {f"{ns}/{p}" for p in names}
        placed = {p for p, w in planned["placements"].items() if p in want}

        def bound_now() -> dict[str, str]:
            return {f"{ns}/{p['metadata']['name']}": p["spec"]["nodeName"]
                    for p in _pods(kube, ns) if (p.get("spec") or {}).get("nodeName")}  # fmt: skip

        with contextlib.suppress(TimeoutError):  # the verdict says which ones were never placed
            _wait("every planned pod bound", lambda: placed <= set(bound_now()), settle_s)
        time.sleep(1.0)  # a pod the planner called unschedulable gets its chance too
        bound = bound_now()
        node_group = {**existing, **bought}
        return compare(
            planned["scale_up"],
            {p: w for p, w in planned["placements"].items() if p in want},
            {u["pod"]: u["reason"] for u in planned["unschedulable"] if u["pod"] in want},
            bound,
            node_group,
            bought,
        )
    finally:
        if created:
            kube.kubectl("delete", "node", *created, "--ignore-not-found", "--wait=false")
        kube.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
