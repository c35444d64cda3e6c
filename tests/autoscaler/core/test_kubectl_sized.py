"""kubectl-sized pods and nodes (autoscaler/core/kubectl_sized.py): valid for the cluster's Kubernetes
(kubernetes-validate --strict), accepted by the real kube-apiserver, and planned exactly as
their lean originals."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes_validate import validate
from kubernetes_validate.utils import ValidationError, latest_version

from autoscaler.adapters.kubernetes import api_client
from autoscaler.core import generate, kubectl_sized
from autoscaler.core.config import PlannerConfig
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.support import load_yaml

VERSIONS = sorted({"1.35.0", latest_version()})  # the oldest supported minor and the newest schemas
CONFIG = PlannerConfig(max_new_nodes_per_loop=1_000_000)


@pytest.fixture(scope="module")
def sized() -> dict:
    return kubectl_sized.snapshot(generate.snapshot(pods=120, shape_count=6, nodes=12, seed=3))


def _typed(obj: dict, kind: str) -> dict:
    return {"apiVersion": "v1", "kind": kind, **obj}


def _samples(sized: dict) -> list[tuple[str, dict]]:
    pending = next(p for p in sized["pods"] if not p["spec"].get("nodeName"))
    running = next(p for p in sized["pods"] if p["spec"].get("nodeName"))
    gpu = next(
        p for p in sized["pods"] if "nvidia.com/gpu" in p["spec"]["containers"][0]["resources"]["requests"]
    )
    return [("Pod", pending), ("Pod", running), ("Pod", gpu), ("Node", sized["nodes"][0])]


@pytest.mark.parametrize("version", VERSIONS)
def test_samples_pass_kubernetes_validate_strict(sized: dict, version: str) -> None:
    for kind, obj in _samples(sized):
        validate(_typed(obj, kind), version, strict=True)


def test_strict_validation_would_catch_a_stray_field(sized: dict) -> None:
    """The oracle is strict: a field Kubernetes does not know fails (so the passes above mean something)."""
    bad = copy.deepcopy(_samples(sized)[0][1])
    bad["spec"]["containers"][0]["livenessProbe"]["periodSecond"] = 10
    with pytest.raises(ValidationError):
        validate(_typed(bad, "Pod"), latest_version(), strict=True)


def test_sizes_are_those_of_real_objects(sized: dict) -> None:
    pod = _samples(sized)[0][1]
    main = pod["spec"]["containers"][0]
    assert 20 <= len(main["env"]) <= 40
    assert {e["manager"] for e in pod["metadata"]["managedFields"]} == {
        "kube-controller-manager",
        "kube-scheduler",
    }
    cond = pod["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in pod["spec"]["tolerations"]  # fmt: skip
    node = sized["nodes"][0]
    assert len(node["status"]["images"]) == 50
    got = kubectl_sized.sizes(sized)
    assert got["pod_bytes"] > 8_000 and got["node_bytes"] > 12_000  # what the benchmark reports, per object
    fields = pod["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"main"}']
    assert set(fields["f:env"]) == {f'k:{{"name":"{e["name"]}"}}' for e in main["env"]}
    vols = pod["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:volumes"]
    assert set(vols) == {f'k:{{"name":"{v["name"]}"}}' for v in pod["spec"]["volumes"]}


@pytest.mark.parametrize(
    "kw",
    [
        dict(pods=1_000, shape_count=40, nodes=150),
        dict(pods=800, shape_count=10, nodes=100, gang_size=8),
        dict(pods=600, shape_count=1, nodes=0, gpu_share=0.0),
        dict(pods=400, shape_count=200, nodes=60, seed=7),
    ],
    ids=["mixed", "gangs", "cpu-only", "many-shapes"],
)
def test_plan_is_the_same_on_lean_and_kubectl_sized(kw: dict) -> None:
    lean = generate.snapshot(**kw)
    want = plan(parse_snapshot(lean), CONFIG).to_dict(placements=True)
    assert want["scale_up"]  # a plan with something in it
    assert plan(parse_snapshot(kubectl_sized.snapshot(lean)), CONFIG).to_dict(placements=True) == want


def test_the_lean_snapshot_is_left_as_it_was() -> None:
    lean = generate.snapshot(pods=50, shape_count=3, nodes=5)
    before = json.dumps(lean, sort_keys=True)
    kubectl_sized.snapshot(lean)
    assert json.dumps(lean, sort_keys=True) == before


def _writers(obj: dict, owners: bool = True) -> list[tuple]:
    """Who manages which fields, by manager (kube-apiserver orders the entries its own way); ``owners=False``:
    but the owner references, which the pods here go without."""
    out = []
    for e in obj["metadata"]["managedFields"]:
        fields = copy.deepcopy(e["fieldsV1"])
        if not owners:
            fields.get("f:metadata", {}).pop("f:ownerReferences", None)
        out.append((e["manager"], e.get("subresource") or "", fields))
    return sorted(out, key=lambda w: w[:2])


def _without_taints(writers: list[tuple]) -> list[tuple]:
    for _, _, fields in writers:
        fields.get("f:spec", {}).pop("f:taints", None)
    return writers


def _with_writers(live: dict, obj: dict) -> dict:
    return live | {"metadata": live["metadata"] | {"managedFields": obj["metadata"]["managedFields"]}}


def _replace_retrying(read, replace, tries: int = 5) -> dict:
    """``replace(read())`` until no other writer (the scheduler, the node controllers) came between; what it
    reads after."""
    for attempt in range(tries):
        try:
            replace(read())
            return read()
        except ApiException as e:
            if e.status != 409 or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def _loopback(node: dict) -> dict:
    """The node's addresses on loopback (nothing on the shared control plane may name another address)."""
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "127.0.0.1"},
                                   {"type": "Hostname", "address": node["metadata"]["name"]}]  # fmt: skip
    node["metadata"]["annotations"]["alpha.kubernetes.io/provided-node-ip"] = "127.0.0.1"
    return node


def test_the_api_server_accepts_them(sized: dict, kube) -> None:
    """Pods are created and a node replaced (spec and /status) through the real kube-apiserver (the run's shared
    control plane), with the official client, and read back whole: their fields and managedFields kept."""
    ns = kube.namespace("sized")
    name = kube.unique("sized-node")  # no kwok label: nothing runs it
    api = api_client(str(kube.admin_kubeconfig))
    core = client.CoreV1Api(api)
    try:
        pods = [p for p in sized["pods"] if not p["spec"].get("nodeName")][:3]
        for sa in {p["spec"].get("serviceAccountName") or "default" for p in pods} - {"default"}:
            # the ServiceAccount admission plugin refuses a pod whose ServiceAccount is missing
            core.create_namespaced_service_account(ns, {"metadata": {"name": sa}})
        for p in pods:
            body = copy.deepcopy(p)
            for k in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences"):
                body["metadata"].pop(
                    k
                )  # a pod whose owner (a Job) is missing: the garbage collector deletes it
            body["metadata"]["namespace"] = ns
            # a scheduler that does not run: kube-scheduler would write the pod's PodScheduled condition in
            # between the test's read and replace, and the writers read back would be its, not the file's
            body["spec"]["schedulerName"] = "no-scheduler-runs-this"
            core.create_namespaced_pod(ns, body)
            # kube-apiserver records its own entry for a create (the client's manager); an update takes the
            # managedFields it is given, when they are valid
            pod_name = body["metadata"]["name"]
            back = _replace_retrying(
                lambda n=pod_name: json.loads(core.read_namespaced_pod(n, ns, _preload_content=False).data),
                lambda live, n=pod_name, p=p: core.replace_namespaced_pod(n, ns, _with_writers(live, p)),
            )
            assert back["spec"]["containers"][0]["env"] == p["spec"]["containers"][0]["env"]
            assert back["spec"]["volumes"] == p["spec"]["volumes"]
            assert _writers(back, owners=False) == _writers(p, owners=False)
        core.create_node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        for attempt in range(
            5
        ):  # the node controllers write to a new node too (taints): re-read on a conflict
            current = json.loads(core.read_node(name, _preload_content=False).data)
            big = _loopback(kubectl_sized.node(current, 0, random.Random(1), "p3.16xlarge"))
            for key in (
                "podCIDR",
                "podCIDRs",
            ):  # the controller-manager's range allocator set them: they stay
                if key in current["spec"]:
                    big["spec"][key] = current["spec"][key]
            try:
                core.replace_node(name, big)
                now = json.loads(core.read_node(name, _preload_content=False).data)
                core.replace_node_status(name, now | {"status": big["status"]})
                break
            except ApiException as e:
                if e.status != 409 or attempt == 4:
                    raise
        # the writes above are the admin's (kube-apiserver names their manager); an update that changes nothing
        # but managedFields takes them as given, when they are valid
        back = _replace_retrying(lambda: json.loads(core.read_node(name, _preload_content=False).data),
                                 lambda live: core.replace_node(name, _with_writers(live, big)))  # fmt: skip
        assert back["status"]["images"] == big["status"]["images"]
        assert back["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "p3.16xlarge"
        # spec.taints is left out: the node lifecycle controller writes it while the test runs (its not-ready taint
        # on a new node, off once the status says Ready), and whether the controller manager's claim on it is still
        # there depends on which write came last (CI saw it both ways)
        assert _without_taints(_writers(back)) == _without_taints(_writers(big))
    finally:
        kube.kubectl("delete", "node", name, "--ignore-not-found", "--wait=false")
        api.close()


CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_case_file_plans_the_same_at_kubectl_size(path: Path) -> None:
    """What a pod or node already has wins over what is added (hand-written objects: init containers, finished
    containers, nodes without conditions or creation time...), so every planner case plans the same at kubectl
    size. Owner references stay as the case has them: a bare pod is not a Job's."""
    case = load_yaml(path)
    snap, config = case["snapshot"], PlannerConfig.from_dict(case.get("config") or {})
    rng = random.Random(1)
    sized = dict(
        snap,
        pods=[kubectl_sized.pod(p, i, rng, owner=False) for i, p in enumerate(snap.get("pods") or [])],
        nodes=[kubectl_sized.node(n, i, rng) for i, n in enumerate(snap.get("nodes") or [])],
    )
    sized = kubectl_sized.with_data_claims(sized)  # the claim every kubectl-sized pod names, bound
    want = plan(parse_snapshot(snap), config).to_dict(placements=True)
    assert plan(parse_snapshot(sized), config).to_dict(placements=True) == want
