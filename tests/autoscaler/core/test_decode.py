"""The decoders: snapshot files, list pages and watch lines into lean objects, plain JSON where the types refuse."""

from __future__ import annotations

import json

from autoscaler.core import decode, lean
from tests.autoscaler.core import inflate

BASE = {
    "metadata": {"name": "p", "namespace": "lab"},
    "spec": {"containers": [{"name": "c", "resources": {}}]},
}
POD = inflate.pod(BASE, 1)


def test_a_watch_line_is_decoded_lean():
    line = json.dumps({"type": "MODIFIED", "object": POD})
    event = decode.watch_event(line, "Pod")
    assert event["type"] == "MODIFIED" and event["object"] is event["raw_object"]
    assert event["object"] == lean.pod(POD) and "managedFields" not in event["object"]["metadata"]


def test_bookmarks_and_errors_are_decoded_plainly():
    bookmark = {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "12"}}}
    assert decode.watch_event(json.dumps(bookmark), "Pod")["object"] == bookmark["object"]
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}
    assert decode.watch_event(json.dumps({"type": "ERROR", "object": status}), "Pod")["raw_object"] == status


def test_an_odd_object_is_kept_whole_and_a_line_that_is_not_json_is_none():
    odd = {**POD, "spec": {**POD["spec"], "containers": "c"}}
    assert decode.watch_event(json.dumps({"type": "ADDED", "object": odd}), "Pod")["object"] == odd
    assert decode.watch_event("{not json", "Pod") is None


def test_equal_specs_are_one_dict():
    shared: dict = {}
    other = inflate.pod(
        {**BASE, "metadata": {"name": "q", "namespace": "lab"}}, 2
    )  # its own uid, env, hostname
    page = json.dumps({"metadata": {"resourceVersion": "5"}, "items": [POD, other]}).encode()
    items, meta = decode.list_page(page, "Pod", shared)
    assert items[0]["spec"] is items[1]["spec"] and len(shared) == 1
    assert meta == {"resourceVersion": "5", "continue": None}
    again = decode.watch_event(json.dumps({"type": "ADDED", "object": POD}), "Pod", shared)
    assert again["object"]["spec"] is items[0]["spec"]


def test_a_kubectl_list_object_is_decoded_lean():
    data = {
        "pods": {"apiVersion": "v1", "kind": "List", "items": [POD]},
        "nodes": {"items": []},
        "groups": [],
    }
    got = decode.snapshot(json.dumps(data))
    assert got["pods"] == {"apiVersion": "v1", "kind": "List", "items": [lean.pod(POD)]}
    assert got["nodes"] == {"items": []}
    data["pods"]["items"] = None  # the parser says what is wrong with it
    assert decode.snapshot(json.dumps(data))["pods"] == {"apiVersion": "v1", "kind": "List", "items": None}


def test_a_snapshot_the_types_refuse_is_read_plainly():
    data = {"pods": {"kind": "List", "items": [POD]}, "nodes": [], "groups": [], "x-note": "hand-written"}
    assert decode.snapshot(json.dumps(data)) == data
    assert decode.snapshot(json.dumps({"pods": [POD], "nodes": [], "groups": []}))["pods"] == [lean.pod(POD)]


def _plan_file(tmp_path, capsys, content: bytes) -> tuple[int, list[str], str]:
    from autoscaler.cli import main

    path = tmp_path / "s.json"
    path.write_bytes(content)
    code = main(["plan", str(path), "--json"])
    out = capsys.readouterr()
    return code, out.err.strip().splitlines(), out.out


def test_autoscaler_plan_reports_what_the_typed_decoder_refuses_in_the_parsers_words(tmp_path, capsys):
    bad = {"pods": [{**POD, "metadata": {**POD["metadata"], "ownerReferences": [{"kind": 3}]}}], "nodes": [],
           "groups": []}  # fmt: skip
    code, err, _ = _plan_file(tmp_path, capsys, json.dumps(bad).encode())
    assert code == 2 and err == [
        "pods[0] (lab/p).metadata.ownerReferences: each needs a string kind and name"
    ]
    code, err, _ = _plan_file(tmp_path, capsys, b'{"pods": [], "nodes": [], "groups": [], "now": "\xff"}')
    assert code == 2 and err == [
        f"{tmp_path / 's.json'}: cannot read it (UnicodeDecodeError); give a readable JSON file"
    ]


def test_autoscaler_plan_reads_a_list_object_and_notes(tmp_path, capsys):
    data = {"pods": {"kind": "List", "items": [POD]}, "nodes": [], "groups": [], "x-note": "by hand"}
    code, _, out = _plan_file(tmp_path, capsys, json.dumps(data).encode())
    assert code == 0 and [u["pod"] for u in json.loads(out)["unschedulable"]] == ["lab/p"]
