"""The lean objects hold everything the planner reads: on every planner case (cases/*.yaml, fit_cases.yaml, the
documented example) the plan of the lean snapshot is the plan of the full one, also after inflating the objects
with what a real API server adds (inflate.py), and through the snapshot file decoder (core/decode.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from autoscaler.core import decode, lean
from autoscaler.core import names as core_names
from autoscaler.core.config import PlannerConfig
from autoscaler.core.errors import SnapshotError
from autoscaler.core.fit import pod_fits_node
from autoscaler.core.planner import plan
from autoscaler.core.snapshot import parse_snapshot
from tests.autoscaler.core import inflate
from tests.support import load_yaml, set_path

HERE = Path(__file__).parent
CASES = sorted((HERE / "cases").glob("*.yaml"))
EXAMPLE = HERE.parents[2] / "docs" / "examples" / "snapshot.json"
FIT = load_yaml(HERE / "fit_cases.yaml")
BAD = load_yaml(HERE / "bad_snapshots.yaml")


def leaned(data: dict) -> dict:
    out = copy.deepcopy(data)
    if not isinstance(out, dict):
        return out
    for key, fn in (("pods", lean.pod), ("nodes", lean.node), ("pdbs", lean.pdb)):
        items = out.get(key)
        if isinstance(items, dict) and isinstance(items.get("items"), list):
            items = items["items"]
        if isinstance(items, list):
            items[:] = [fn(o) for o in items]
    return out


def planned(data: dict, config: dict) -> dict:
    return plan(parse_snapshot(copy.deepcopy(data)), PlannerConfig.from_dict(config)).to_dict(placements=True)


def _cases():
    out = [(p.stem, load_yaml(p)) for p in CASES]
    out.append(("docs-example", {"snapshot": json.loads(EXAMPLE.read_text())}))
    return out


LEAN_CASES = _cases()


@pytest.mark.parametrize("name,case", LEAN_CASES, ids=[n for n, _ in LEAN_CASES])
def test_the_lean_snapshot_plans_as_the_full_one(name, case) -> None:
    full = case["snapshot"]
    config = case.get("config") or {}
    want = planned(full, config)
    assert planned(leaned(full), config) == want, "lean"
    big = inflate.snapshot(full)
    assert planned(big, config) == want, "the inflater changed what the planner reads"
    assert planned(leaned(big), config) == want, "lean after inflating"
    assert planned(decode.snapshot(json.dumps(big).encode()), config) == want, "decoded from the file"


def test_inflating_makes_objects_many_times_larger_and_lean_much_smaller() -> None:
    case = load_yaml(HERE / "cases" / CASES[0].name)["snapshot"]
    big = inflate.snapshot(case)
    size = [len(json.dumps(x["pods"] + x["nodes"])) for x in (case, big, leaned(big))]
    assert size[1] > 5 * size[0], size
    assert size[2] < size[1] / 5, size


@pytest.mark.parametrize("case", FIT["cases"], ids=[c["name"] for c in FIT["cases"]])
def test_pod_fits_node_on_lean_objects(case: dict) -> None:
    node = copy.deepcopy(FIT["node"])
    for part, patch in (case.get("node_patch") or {}).items():
        node[part].update(patch)
    others = case.get("on_node") or []
    got = pod_fits_node(
        lean.pod(inflate.pod(case["pod"], 1)),
        lean.node(inflate.node(node, 1)),
        [lean.pod(inflate.pod(o, i)) for i, o in enumerate(others)],
    )
    assert got == case["reason"]


def _errors(data) -> list[str]:
    with pytest.raises(SnapshotError) as e:
        parse_snapshot(data)
    return e.value.lines


@pytest.mark.parametrize("case", BAD["cases"], ids=[c["name"] for c in BAD["cases"]])
def test_bad_snapshots_give_the_same_lines_lean_and_decoded(case: dict) -> None:
    """An object whose kept fields have the wrong structure is kept whole; the decoder falls back to plain JSON
    for what its types refuse: the parser names every problem as before."""
    data = copy.deepcopy(BAD["base"])
    for path, value in (case.get("set") or {}).items():
        set_path(data, path, value)
    if "replace" in case:
        data = case["replace"]
    want = case["errors"]
    assert _errors(leaned(data)) == want
    assert _errors(decode.snapshot(json.dumps(data).encode())) == want


def test_every_annotation_the_code_names_is_kept() -> None:
    structs = (lean.PodAnnotations, lean.NodeAnnotations, lean.ClaimAnnotations, lean.ClassAnnotations)
    kept = {f.encode_name for s in structs for f in _fields(s)}
    named = {v for k, v in vars(core_names).items() if k.endswith("_ANNOTATION")}
    assert named <= kept, named - kept


def _fields(struct) -> list:
    import msgspec

    return msgspec.structs.fields(struct)


def test_the_transform_leaves_its_argument_alone_and_keeps_bad_objects_whole() -> None:
    pod = inflate.pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, 3)
    before = copy.deepcopy(pod)
    small = lean.pod(pod)
    assert pod == before
    assert "managedFields" not in small["metadata"] and "env" not in small["spec"]["containers"][0]
    assert small["metadata"]["uid"] == pod["metadata"]["uid"]  # Events name the pod by uid
    # the claim (its name only) and the only emptyDir; not the configMap and the projected token
    assert small["spec"]["volumes"] == [
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "checkpoints"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
    ]
    bad = {"metadata": {"name": "p", "ownerReferences": "Job"}, "spec": {"containers": []}}
    assert lean.pod(bad) == bad


def test_a_finished_pod_keeps_when_its_containers_finished() -> None:
    done = {"state": {"terminated": {"finishedAt": "2026-01-01T00:00:00Z", "exitCode": 0}}, "image": "x"}
    running = {"state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
    pod = {"metadata": {"name": "p"}, "status": {"phase": "Running", "containerStatuses": [done, running]}}
    assert lean.pod(pod)["status"]["containerStatuses"] == [
        {"state": {"terminated": {"finishedAt": "2026-01-01T00:00:00Z"}}}
    ]
    pod["status"]["containerStatuses"] = [running]
    assert lean.pod(pod)["status"] == {"phase": "Running"}


def test_pods_differing_only_in_dropped_volumes_share_one_spec() -> None:
    """The ServiceAccount admission plugin names each pod's token volume kube-api-access-<random> (a projected
    volume, dropped): the pods of one Job must still share one lean spec, so their shape is worked out once."""

    def pod(i: int, token: str) -> dict:
        return {
            "metadata": {"name": f"p{i}", "namespace": "lab"},
            "spec": {
                "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
                "volumes": [
                    {"name": token, "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                ],
            },
        }

    shared: dict = {}
    a, b = (lean.pod(pod(i, f"kube-api-access-{s}"), shared) for i, s in ((1, "x7k2p"), (2, "q9z4m")))
    assert a["spec"] is b["spec"]
    assert a["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    c = lean.pod({**pod(3, "kube-api-access-abcde"), "spec": {**pod(3, "t")["spec"], "priority": 5}}, shared)
    assert c["spec"] is not a["spec"]


def test_informer_pages_share_one_copy_of_repeated_strings() -> None:
    """The pods of a Job repeat label keys and values and their owner; the informers' pages keep one string for
    each (interned) and one owner list, and the objects are unchanged."""
    import json as _json

    def pod(i: int) -> dict:
        return {
            "metadata": {
                "name": f"p{i}",
                "namespace": "lab",
                "labels": {"job-name": "train-" + "x" * 20, "research.cluster/user": "user" + "0" * 10},
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "train-" + "x" * 20, "uid": "u" * 36}
                ],
            },
            "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
        }

    page = _json.dumps({"metadata": {"resourceVersion": "7"}, "items": [pod(1), pod(2)]}).encode()
    items, meta = decode.list_page(page, "Pod", {})
    assert meta["resourceVersion"] == "7"
    assert [i["metadata"] for i in items] == [pod(1)["metadata"], pod(2)["metadata"]]
    (k1, v1), (k2, v2) = (next(iter(i["metadata"]["labels"].items())) for i in items)
    assert k1 is k2 and v1 is v2
    assert items[0]["metadata"]["namespace"] is items[1]["metadata"]["namespace"]
    assert items[0]["spec"] is items[1]["spec"]
    assert items[0]["metadata"]["ownerReferences"] is items[1]["metadata"]["ownerReferences"]


def test_a_decoded_pod_holds_values_never_json_text() -> None:
    """The decoder keeps a pod's spec leaves and owner references as JSON text (lean.DecodedPod) and shares them by
    that text; what it gives out holds plain values only, equal to json.loads' for the kept fields, and two pods
    whose equal values are written differently (spacing, key order) still plan alike (they just are not shared)."""
    spec = {
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": 1}}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"a": "b"},
        "priority": 10,
        "volumes": [{"name": "scratch", "hostPath": {"path": "/scratch"}}],
    }
    owners = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u1", "controller": True, "x": 1}]
    pods = [{"metadata": {"name": f"p{i}", "ownerReferences": owners}, "spec": spec} for i in range(2)]
    spaced = json.dumps({"metadata": {"name": "p2", "ownerReferences": owners}, "spec": spec}, indent=2)
    page = ('{"items": [' + ",".join(json.dumps(p) for p in pods) + "," + spaced + "]}").encode()
    items, _ = decode.list_page(page, "Pod", {})
    assert json.loads(json.dumps(items)) == items  # plain values only (a msgspec.Raw would not encode)
    for item in items:
        assert item["spec"] == spec
        assert item["metadata"]["ownerReferences"] == [{k: v for k, v in owners[0].items() if k != "x"}]
    assert items[0]["spec"] is items[1]["spec"] and items[1]["spec"] is not items[2]["spec"]
    assert items[0]["metadata"]["ownerReferences"] is items[1]["metadata"]["ownerReferences"]


def test_odd_owner_references_and_spec_leaves_reach_the_parser_as_given() -> None:
    """Spec leaves and owner references are read as JSON text, so any JSON is accepted there: a value of the wrong
    kind comes out as json.loads gives it, and the parser names it, as it does for the full object."""
    pod = {
        "metadata": {"name": "p", "ownerReferences": {"kind": "Job"}},
        "spec": {"containers": [], "priority": "high"},
    }
    (item,), _ = decode.list_page(json.dumps({"items": [pod]}).encode(), "Pod", {})
    assert item["metadata"]["ownerReferences"] == {"kind": "Job"} and item["spec"]["priority"] == "high"
    snap = {"pods": [pod], "nodes": [], "groups": []}
    with pytest.raises(SnapshotError) as lean_error:
        parse_snapshot(decode.snapshot(json.dumps(snap).encode()))
    with pytest.raises(SnapshotError) as full_error:
        parse_snapshot(snap)
    assert lean_error.value.lines == full_error.value.lines
