"""The controller keeps its parsed pods and nodes between passes (autoscaler/core/snapshot.py ``ParseCache``): through
the real Kubernetes adapter's informers, each change the watch brings is seen by the next pass, and only the
changed objects are parsed again."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

from kubernetes import client

from autoscaler.adapters.kubernetes import KubeCluster
from tests.autoscaler.fakes import pod
from tests.autoscaler.test_controller import GPU_LABELS, Clock, controller, world


class Kube(KubeCluster):
    """The real adapter and its informers, listing the pages given; its ConfigMaps and Events in memory."""

    def __init__(self, pods: list[dict], nodes: list[dict]):
        super().__init__(client.ApiClient())
        self.state: dict = {}
        self.events_seen: list = []
        self.relist(pods, nodes)

    def relist(self, pods: list[dict], nodes: list[dict]) -> None:
        lists = {"pods": pods, "nodes": nodes}
        for name, informer in self.informers.items():
            body = json.dumps({"metadata": {"resourceVersion": "100"}, "items": lists.get(name, [])}).encode()
            informer._list = lambda body=body, **_: SimpleNamespace(data=body)
        self.sync()

    def watch(self, kind: str, obj: dict) -> None:
        self.informers["pods"]._apply(kind, copy.deepcopy(obj))

    def read_state(self):
        return dict(self.state)

    def write_state(self, data):
        self.state = dict(data)

    def write_status(self, data):
        pass

    def record_event(self, pod, reason, message, type="Normal"):  # noqa: A002
        self.events_seen.append(reason)
        return True

    def record_status_event(self, reason, message, type="Normal"):  # noqa: A002
        return True


def versioned(obj: dict, rv: int) -> dict:
    obj["metadata"]["resourceVersion"] = str(rv)
    return obj


def setup():
    clock = Clock()
    fake, cloud = world(clock=clock)
    cloud.launch = False  # a bought node never comes: the pods stay as the watch says
    nodes = [versioned(n, 10 + i) for i, n in enumerate(fake.nodes.values())]
    others = [versioned(pod(f"other-{i}", cpu="1", node="cpu-0"), 20 + i) for i in range(3)]
    kube = Kube([*others, versioned(pod("a", cpu="2"), 1)], nodes)
    return kube, cloud, controller(kube, cloud, clock), nodes, others


def test_each_change_the_watch_brings_is_seen_by_the_next_pass_and_only_it_is_parsed_again():
    kube, cloud, ctl, nodes, others = setup()
    cache = ctl._parse_cache
    first = ctl.run_once()
    assert not first.errors and first.pending_pods == 1 and not cloud.changes  # fits the CPU node
    assert (cache.parsed, cache.hits) == (5, 0)

    again = ctl.run_once()
    assert (cache.parsed, cache.hits) == (0, 5) and again.plan["scale_up"] == first.plan["scale_up"]

    # its requests change (a new version of the pod): 8 GPUs, a GPU node bought for it
    kube.watch("MODIFIED", versioned(pod("a", cpu="8", memory="64Gi", gpus=8, selector=GPU_LABELS), 2))
    bigger = ctl.run_once()
    assert (cache.parsed, cache.hits) == (1, 4)
    assert bigger.plan["scale_up"] == {"c-us-west-2-v100": 1}
    assert ("set_desired", "c-us-west-2-v100", 1) in cloud.changes

    # bound and running: no longer demand
    kube.watch("MODIFIED", versioned(pod("a", cpu="2", node="cpu-0"), 3))
    bound = ctl.run_once()
    assert bound.pending_pods == 0 and (cache.parsed, cache.hits) == (1, 4)
    assert ctl._placements.get("research/a") is None

    # deleted: gone from the pass and from the cache
    kube.watch("DELETED", versioned(pod("a", cpu="2", node="cpu-0"), 4))
    gone = ctl.run_once()
    assert gone.pending_pods == 0 and len(cache.pods) == 3 and cache.hits == 4

    # a relist replaces every object (even those at the same version): each is parsed again once
    kube.relist([*copy.deepcopy(others), versioned(pod("b", cpu="2"), 5)], copy.deepcopy(nodes))
    relisted = ctl.run_once()
    assert relisted.pending_pods == 1 and (cache.parsed, cache.hits) == (5, 0)
    ctl.run_once()
    assert (cache.parsed, cache.hits) == (0, 5)


def test_a_pod_the_parser_rejects_is_reported_at_every_pass_and_never_kept():
    kube, cloud, ctl, nodes, others = setup()
    bad = versioned(pod("bad", cpu="lots"), 7)
    kube.watch("ADDED", bad)
    for _ in range(2):
        result = ctl.run_once()
        assert any("research/bad" in e and "cpu" in e for e in result.errors)
        assert result.pending_pods == 1 and result.plan is not None  # the pass goes on with the others
    assert "research/bad" not in {e[2].key for e in ctl._parse_cache.pods.values()}
