"""The informers' lean caches: list pages and watched objects are kept lean, the controller acts on lean objects
exactly as on whole ones, and the cache of kubectl-sized pods is a small fraction of the whole objects' memory."""

from __future__ import annotations

import copy
import json
import tracemalloc
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from autoscaler.adapters.informer import Informer
from autoscaler.core import lean
from tests.autoscaler import real_kube
from tests.autoscaler.core import inflate
from tests.autoscaler.fakes import FakeCluster, pod
from tests.autoscaler.test_controller import GPU_LABELS, T0, Clock, controller, world


def pages(objs: list[dict], size: int):
    """A list call as the client makes it with ``_preload_content=False``: pages of raw JSON bytes."""
    calls = []

    def list_call(limit, _continue=None, **_):
        start = int(_continue or 0)
        calls.append(start)
        chunk = objs[start : start + limit]
        rest = start + limit < len(objs)
        body = {"metadata": {"resourceVersion": "77", "continue": str(start + limit) if rest else None},
                "items": chunk}  # fmt: skip
        return SimpleNamespace(data=json.dumps(body).encode())

    return list_call, calls


def big_pods(n: int) -> list[dict]:
    base = [pod(f"p-{i}", cpu="8", memory="64Gi", gpus=8, selector=GPU_LABELS, owner="Job") for i in range(n)]
    return [inflate.pod(p, i) for i, p in enumerate(base)]


def test_a_list_is_decoded_lean_page_by_page():
    objs = big_pods(5)
    list_call, calls = pages(objs, 2)
    inf = Informer("pods", list_call, "Pod", "v1", page_size=2)
    inf.sync()
    assert calls == [0, 2, 4] and inf.resource_version == "77"
    got = inf.get("research/p-3")
    assert got == {**lean.pod(objs[3]), "kind": "Pod", "apiVersion": "v1"}
    assert "managedFields" not in got["metadata"] and got["metadata"]["uid"] == objs[3]["metadata"]["uid"]


def test_a_page_with_an_odd_object_keeps_that_one_whole_and_the_rest_lean():
    objs = big_pods(2)
    objs[1]["metadata"]["ownerReferences"] = "not a list"  # the parser reports it; the cache must not hide it
    list_call, _ = pages(objs, 10)
    inf = Informer("pods", list_call, "Pod", "v1")
    inf.sync()
    assert "managedFields" not in inf.get("research/p-0")["metadata"]
    assert inf.get("research/p-1")["metadata"]["ownerReferences"] == "not a list"


def test_watched_objects_are_kept_lean_and_reported_lean():
    heard = []
    inf = Informer("pods", None, "Pod", "v1", on_event=lambda kind, obj: heard.append(obj))
    [obj] = big_pods(1)
    inf._apply("ADDED", copy.deepcopy(obj))
    assert inf.get("research/p-0") == {**lean.pod(obj), "kind": "Pod", "apiVersion": "v1"} == heard[0]
    whole = Informer("pods", None, "Pod", "v1", lean_objects=False)
    whole._apply("ADDED", copy.deepcopy(obj))
    assert whole.get("research/p-0") == obj


def _cache_bytes(objs: list[dict], lean_objects: bool) -> int:
    list_call, _ = pages(objs, 500)
    inf = Informer("pods", list_call, "Pod", "v1", lean_objects=lean_objects)
    tracemalloc.start()
    inf.sync()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(inf.items()) == len(objs)
    return held


def test_the_cache_of_kubectl_sized_pods_is_a_small_fraction_of_the_whole_objects():
    objs = big_pods(300)
    whole, small = _cache_bytes(objs, False), _cache_bytes(objs, True)
    assert small < whole / 5, (small, whole)


class LeanCluster(FakeCluster):
    """The fake cluster as the live adapter serves it: what the caches hold is lean (fresh reads are whole)."""

    def list_pods(self):
        return [lean.pod(p) for p in super().list_pods()]

    def list_nodes(self):
        return [lean.node(n) for n in super().list_nodes()]

    def list_pdbs(self):
        return [lean.pdb(b) for b in super().list_pdbs()]


def _run(cluster_class) -> tuple:
    """Pending GPU pods (scale-up, events), one that fits nowhere (warning), an idle CPU node (taint, terminate,
    delete), a CPU node held by a pod that must not be evicted, one whose pod may move; every object as an API server returns it."""
    clock = Clock()
    pods = [
        pod(f"train-{i}", cpu="8", memory="64Gi", gpus=8, selector=GPU_LABELS, owner="Job") for i in range(3)
    ]
    pods.append(pod("huge", gpus=16, selector=GPU_LABELS))
    pods.append(pod("keep", node="cpu-0", annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
                    created=T0 - timedelta(hours=1)))  # fmt: skip
    pods.append(pod("move", node="cpu-1", created=T0 - timedelta(hours=1)))
    full, cloud = world(pods, clock=clock, cpu_nodes=3)
    cluster = cluster_class(
        pods=[inflate.pod(p, i) for i, p in enumerate(full.pods.values())],
        nodes=[inflate.node(n, i) for i, n in enumerate(full.nodes.values())],
    )
    recorded = []
    record = cluster.record_event
    cluster.record_event = lambda p, *a: (recorded.append(p["metadata"].get("uid")), record(p, *a))
    ctl = controller(cluster, cloud, clock)
    plans = []
    for step in (0, 601, 10, 10, 601, 10, 10):
        clock.advance(step)
        result = ctl.run_once()
        assert result.errors == []
        plans.append(result.plan)
    return plans, cluster.changes, cluster.events, recorded, cloud.changes


def test_the_controller_acts_on_lean_objects_as_on_whole_ones():
    full, lean_run = _run(FakeCluster), _run(LeanCluster)
    plans, changes, events, uids, cloud = full
    assert ("taint", "cpu-2") in changes and any(c[0] == "terminate" for c in cloud), (changes, cloud)
    assert any(e[1] == "NotTriggerScaleUp" for e in events) and all(u.startswith("6f1c") for u in uids)
    assert lean_run == full


def _as_created(obj: dict, i: int) -> dict:
    """``obj`` inflated as a training pod is (tests/autoscaler/core/inflate.py: env, mounts, probes, annotations,
    volumes) with what only the API server writes left out (uid, version, times, managedFields, status): what a Job
    controller would create. No claim (its volume an emptyDir): the snapshots here carry no claims."""
    p = inflate.pod(obj, i)
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generateName"):
        p["metadata"].pop(key, None)
    p.pop("status", None)
    p["spec"]["volumes"] = [{"name": "ckpt", "emptyDir": {}} if v["name"] == "ckpt" else v
                            for v in p["spec"]["volumes"]]  # fmt: skip
    p["spec"]["serviceAccountName"] = p["spec"]["serviceAccount"] = "default"
    p["spec"]["schedulerName"] = obj["spec"].get("schedulerName", "default-scheduler")
    return p


@pytest.fixture
def ns(kube):
    """A namespace of the test's own on the run's shared real control plane (tests/conftest.py ``kube``)."""
    yield from real_kube.own_namespace(kube, "lean")


def test_a_snapshot_of_the_lean_caches_replays_the_plan_of_whole_objects(kube, ns):
    """Against the real kube-apiserver: pods as it returns them (managedFields and all), listed by a lean and a whole
    adapter; the snapshot each gives plans the same, also written to JSON and read back as `autoscaler plan` reads
    it."""
    from autoscaler.adapters.kubernetes import KubeCluster, api_client
    from autoscaler.core import decode, generate
    from autoscaler.core.config import PlannerConfig
    from autoscaler.core.planner import plan
    from autoscaler.core.snapshot import parse_snapshot
    from tests.autoscaler import real_kube

    pods = [_as_created(real_kube.pod(f"big-{i}", ns, gpus=16), i) for i in range(6)]  # fits no node
    pods += [_as_created(real_kube.pod(f"small-{i}", ns), 10 + i) for i in range(4)]
    real_kube.create(kube, *pods)
    groups = [
        generate.group("gpu", "us-west-2", "p3.16xlarge"),
        generate.group("cpu", "us-west-2", "m6i.2xlarge"),
    ]
    now = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    plans = []
    for lean_objects in (False, True):
        api = api_client(str(kube.admin_kubeconfig))
        cluster = real_kube.scope(KubeCluster(api, namespace=ns, page_size=3, lean_objects=lean_objects), ns)
        cluster.sync()
        snap = {"pods": cluster.list_pods(), "nodes": cluster.list_nodes(), "pdbs": cluster.list_pdbs(),
                "groups": groups, "now": now}  # fmt: skip
        api.close()
        assert len(snap["pods"]) == 10 and snap["nodes"] == []
        assert all(("managedFields" in p["metadata"]) != lean_objects for p in snap["pods"])
        assert all(("env" in p["spec"]["containers"][0]) != lean_objects for p in snap["pods"])
        plans.append(plan(parse_snapshot(copy.deepcopy(snap)), PlannerConfig()).to_dict(placements=True))
        if lean_objects:
            replayed = decode.snapshot(json.dumps(snap).encode())
            assert plan(parse_snapshot(replayed), PlannerConfig()).to_dict(placements=True) == plans[0]
    assert plans[1] == plans[0]
    assert plans[0]["scale_up"] and plans[0]["unschedulable"]


def test_a_watched_pod_arrives_lean_from_the_api_server(kube, ns):
    """A pod created while the adapter watches arrives lean, after kube-scheduler has written its condition
    (PodScheduled False: 16 GPUs fit no node), with the server's uid and version."""
    from autoscaler.adapters.kubernetes import KubeCluster, api_client
    from tests.autoscaler import real_kube
    from tests.autoscaler.real_kube import wait_until

    api = api_client(str(kube.admin_kubeconfig))
    cluster = real_kube.scope(KubeCluster(api, namespace=ns, page_size=2, watch_timeout_s=2), ns)
    try:
        cluster.start()
        assert cluster.wait_synced(10)
        real_kube.create(kube, _as_created(real_kube.pod("late", ns, gpus=16, scheduled=True), 7))
        key = f"{ns}/late"

        def whole() -> dict:
            return json.loads(kube.kubectl("-n", ns, "get", "pod", "late", "-o", "json", check=True).stdout)

        wait_until(lambda: whole().get("status", {}).get("conditions"))  # kube-scheduler's verdict
        version = whole()["metadata"]["resourceVersion"]
        wait_until(lambda: (cluster.informers["pods"].get(key) or {}).get("metadata", {}).get("resourceVersion")
                   == version)  # fmt: skip
        got = cluster.informers["pods"].get(key)
    finally:
        cluster.stop()
        api.close()
    assert "managedFields" not in got["metadata"] and got["metadata"]["uid"] == whole()["metadata"]["uid"]
    [container] = got["spec"]["containers"]
    assert (
        set(container) <= {"name", "resources", "ports", "restartPolicy"}
        and container["resources"]["requests"]
    )
    assert got["spec"]["tolerations"] and "conditions" not in got.get("status", {})


def test_the_pods_of_a_job_on_many_nodes_share_their_containers_and_keep_their_own_node_name():
    objs = big_pods(6)
    for i, p in enumerate(objs):
        p["spec"]["nodeName"] = f"node-{i % 3}"  # three distinct specs, equal but for the node
    list_call, _ = pages(objs, 4)
    inf = Informer("pods", list_call, "Pod", "v1", page_size=4)
    inf.sync()
    later = copy.deepcopy(objs[0])
    later["metadata"]["name"], later["spec"]["nodeName"] = "p-late", "node-9"
    inf._apply("ADDED", later)
    got = [inf.get(f"research/p-{i}") for i in range(6)] + [inf.get("research/p-late")]
    assert [p["spec"]["nodeName"] for p in got] == ["node-0", "node-1", "node-2"] * 2 + ["node-9"]
    assert got == [{**lean.pod(o), "kind": "Pod", "apiVersion": "v1"} for o in [*objs, later]]
    assert len({id(p["spec"]) for p in got}) == 4  # one spec per node
    for part in ("containers", "tolerations", "nodeSelector"):
        assert len({id(p["spec"][part]) for p in got}) == 1, part
    assert len({id(p["metadata"]["annotations"]) for p in got if "annotations" in p["metadata"]}) <= 1


def test_nodes_of_one_type_share_their_allocatable_and_keep_their_own_labels():
    from autoscaler.core import generate
    from tests.autoscaler.fakes import node as fake_node

    group = {
        **generate.group("cpu", "us-west-2", "m6i.2xlarge"),
        "allocatable": {"cpu": "8", "memory": "30Gi"},
    }
    objs = [inflate.node(fake_node(f"n-{i}", group, f"i-{i}", created=T0), i) for i in range(3)]
    objs[2]["status"]["allocatable"]["cpu"] = "7"  # not equal: its own
    list_call, _ = pages(objs, 500)
    inf = Informer("nodes", list_call, "Node", "v1")
    inf.sync()
    got = [inf.get(f"/n-{i}") for i in range(3)]
    assert got == [{**lean.node(o), "kind": "Node", "apiVersion": "v1"} for o in objs]
    assert got[0]["status"]["allocatable"] is got[1]["status"]["allocatable"]
    assert got[2]["status"]["allocatable"] is not got[0]["status"]["allocatable"]
    assert got[0]["metadata"]["labels"] is not got[1]["metadata"]["labels"]


def test_the_table_of_shared_parts_is_bounded(monkeypatch):
    monkeypatch.setattr(lean, "SHARED_PARTS_LIMIT", 5)
    table: dict = {}
    for i in range(20):
        p = lean.pod(big_pods(1)[0])
        p["spec"]["tolerations"] = [{"key": f"k{i}", "operator": "Exists"}]  # a new part each time
        lean.share_parts(p, table)
        assert len(table) <= 5
        assert (
            table[("tolerations", lean._MSGPACK.encode(p["spec"]["tolerations"]))] is p["spec"]["tolerations"]
        )
