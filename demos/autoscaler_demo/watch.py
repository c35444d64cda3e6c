"""What the demo shows while it runs: the cluster through the Kubernetes API, the autoscaler's decisions from its
JSON log, and capacity failures from the Auto Scaling API; each look is one :class:`Sample` for the timeline."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import boto3

from clusterspec.catalog import instance_types
from clusterspec.names import NODE_GROUP_LABEL
from demos.autoscaler_demo.events import CausalOrder, Decision, from_activity, from_log_record
from simulator.workload import NAMESPACE

GPU = "nvidia.com/gpu"
__all__ = ["Decision", "Sample", "Watcher", "node_stage"]


@dataclass
class Sample:
    t: float
    pending: int
    running: int
    done: int
    gpus_by_region: dict[str, int]
    nodes_by_group: dict[str, int]
    booting: int = 0  # registered nodes NotReady or still tainted not-ready / uninitialized
    awaiting_gpus: int = 0  # GPU nodes Ready whose device plugin has not advertised nvidia.com/gpu yet


NOT_USABLE_TAINTS = ("node.kubernetes.io/not-ready", "node.cloudprovider.kubernetes.io/uninitialized")


def node_stage(node: dict) -> str:
    """Where a node is in its life (simulator/model/boot.py): booting, awaiting-gpus or usable."""
    status = node.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )
    taints = {t.get("key") for t in (node.get("spec") or {}).get("taints") or ()}
    if not ready or taints & set(NOT_USABLE_TAINTS):
        return "booting"
    itype = instance_types().get(
        (node["metadata"].get("labels") or {}).get("node.kubernetes.io/instance-type", "")
    )
    if itype is not None and itype.gpus and not int(status.get("allocatable", {}).get(GPU, 0)):
        return "awaiting-gpus"
    return "usable"


@dataclass
class Watcher:
    core_api: object  # kubernetes.client.CoreV1Api
    aws_url: str
    regions: list[str]
    autoscaler_log: Path
    t0: float = field(
        default_factory=time.time
    )  # wall clock (epoch), as the log records and activities are stamped
    samples: list[Sample] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    _log_pos: int = 0
    _seen_activities: set = field(default_factory=set)
    _clients: dict = field(default_factory=dict)
    order: CausalOrder = field(default_factory=CausalOrder)
    phases: dict[str, str] = field(default_factory=dict)  # pod name -> phase, at the last look
    started: Counter = field(
        default_factory=Counter
    )  # job name -> its pods Running or Succeeded, at the last look
    stages_seen: dict[str, set] = field(default_factory=dict)  # node -> the stages it was seen in
    group_nodes_seen: set = field(
        default_factory=set
    )  # nodes of an Auto Scaling group (not the control plane)

    def now(self) -> float:
        return time.time() - self.t0

    def _list(self, fn, *args) -> list[dict]:
        """Raw JSON from the API (the client's model classes are slow to build for a live view)."""
        return json.loads(fn(*args, _preload_content=False).data)["items"]

    def look(self) -> Sample:
        pods = self._list(self.core_api.list_namespaced_pod, NAMESPACE)
        self.phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase", "Pending") for p in pods}
        self.started = Counter(
            (p["metadata"].get("labels") or {}).get("job-name", "")
            for p in pods
            if (p.get("status") or {}).get("phase") in ("Running", "Succeeded")
        )
        phases = Counter(self.phases.values())
        by_group: Counter[str] = Counter()
        by_region: Counter[str] = Counter()
        stages: Counter[str] = Counter()
        for n in self._list(self.core_api.list_node):
            stage = node_stage(n)
            stages[stage] += 1
            self.stages_seen.setdefault(n["metadata"]["name"], set()).add(stage)
            labels = n["metadata"].get("labels") or {}
            if labels.get(NODE_GROUP_LABEL):
                self.group_nodes_seen.add(n["metadata"]["name"])
            by_group[labels.get(NODE_GROUP_LABEL, "?")] += 1
            gpus = int((n.get("status") or {}).get("allocatable", {}).get(GPU, 0))
            by_region[labels.get("topology.kubernetes.io/region", "?")] += gpus
        sample = Sample(
            self.now(),
            phases["Pending"],
            phases["Running"],
            phases["Succeeded"],
            dict(by_region),
            dict(by_group),
            stages["booting"],
            stages["awaiting-gpus"],
        )
        self.samples.append(sample)
        return sample

    def new_decisions(self) -> list[Decision]:
        """The events that can be shown now, in causal order (demos/autoscaler_demo/events.py): the autoscaler's
        actions, the cloud's failed launches and the demo's own notes. Activities are read BEFORE the log, so
        every event stamped before that read is known when this returns."""
        known_until = self.now()
        self.order.add(self._from_activities())
        self.order.add(self._from_log())
        return self._shown(self.order.release(known_until))

    def note(self, text: str, style: str = "", t: float | None = None) -> None:
        """One of the demo's own lines (a wave submitted, a status), shown in time order with the events."""
        self.order.add([Decision(self.now() if t is None else t, text, "note", style=style)])

    def flush(self) -> list[Decision]:
        """Whatever is still held, in causal order (at the end)."""
        return self._shown(self.order.flush())

    def _shown(self, events: list[Decision]) -> list[Decision]:
        self.decisions.extend(e for e in events if e.kind != "note")
        return events

    def _from_log(self) -> list[Decision]:
        if not self.autoscaler_log.exists():
            return []
        with self.autoscaler_log.open() as f:
            f.seek(self._log_pos)
            chunk = f.read()
        complete = chunk[: chunk.rfind("\n") + 1]
        self._log_pos += len(complete.encode())
        out = []
        for line in complete.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and (event := from_log_record(rec, self.t0, self.now())) is not None:
                out.append(event)
        return out

    def _client(self, region: str):
        if region not in self._clients:
            self._clients[region] = boto3.Session(
                aws_access_key_id="demo", aws_secret_access_key="demo"
            ).client("autoscaling", region_name=region, endpoint_url=self.aws_url)
        return self._clients[region]

    def _from_activities(self) -> list[Decision]:
        out = []
        for region in self.regions:
            for act in self._client(region).describe_scaling_activities()["Activities"]:
                if act["ActivityId"] in self._seen_activities:
                    continue
                self._seen_activities.add(act["ActivityId"])
                if (event := from_activity(act, region, self.t0, self.now())) is not None:
                    out.append(event)
        return out


def utc_now() -> str:
    return datetime.now(UTC).strftime("%H:%M:%S")
