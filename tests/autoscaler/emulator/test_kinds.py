"""Every kind the project's clients and cluster-autoscaler's informers use (kinds.yaml), served as kube-apiserver
serves it: create, get, list, watch with bookmarks and as a streaming list (sendInitialEvents, KEP-3157), update,
patch, delete; a request into a namespace that does not exist is 404 (NamespaceLifecycle); a body in protobuf is
415 for the kinds the emulator cannot read; namespaces are watched like any kind."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from autoscaler.emulator import Emulator
from autoscaler.model import ClusterModel, VirtualClock
from tests.support import load_yaml

KINDS = load_yaml(Path(__file__).parent / "kinds.yaml")


@pytest.fixture(scope="module")
def emu():
    with Emulator(ClusterModel(VirtualClock(start=1_767_225_600.0)), namespaces=("kinds",)) as e:
        e.api.bookmark_interval_s = 0.1
        yield e


def call(emu, method, path, body=None, ctype="application/json"):
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(emu.url + path, data=data, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def watch(emu, path, query, wanted: int, until=lambda e: False) -> list[dict]:
    events: list[dict] = []

    def read():
        with urllib.request.urlopen(f"{emu.url}{path}?watch=1&timeoutSeconds=2&{query}", timeout=10) as r:
            for line in r:
                events.append(json.loads(line))
                if len(events) >= wanted or until(events[-1]):
                    return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(8)
    return events


def _coll(case) -> str:
    return (
        f"{case['path']}/namespaces/kinds/{case['plural']}"
        if case["namespaced"]
        else f"{case['path']}/{case['plural']}"
    )


@pytest.mark.parametrize("case", KINDS, ids=[c["plural"] for c in KINDS])
def test_every_kind_is_served_whole(emu, case) -> None:
    coll = _coll(case)
    name = f"k-{case['plural'][:20]}"
    obj = {**case["object"], "metadata": {**case["object"]["metadata"], "name": name}}
    code, made = call(emu, "POST", coll, obj)
    assert code == 201, made
    code, got = call(emu, "GET", f"{coll}/{name}")
    assert code == 200 and got["metadata"]["uid"] == made["metadata"]["uid"]
    code, listed = call(emu, "GET", coll)
    assert code == 200 and listed["kind"].endswith("List") and int(listed["metadata"]["resourceVersion"]) > 0
    assert name in [i["metadata"]["name"] for i in listed["items"]]
    code, patched = call(emu, "PATCH", f"{coll}/{name}", {"metadata": {"labels": {"patched": "yes"}}},
                         "application/merge-patch+json")  # fmt: skip
    assert code == 200 and patched["metadata"]["labels"]["patched"] == "yes"
    patched["metadata"]["annotations"] = {"updated": "yes"}
    code, updated = call(emu, "PUT", f"{coll}/{name}", patched)
    assert code == 200 and updated["metadata"]["annotations"]["updated"] == "yes"
    # a watch from the list's version sees the change, then bookmarks while idle (allowWatchBookmarks)
    rv = listed["metadata"]["resourceVersion"]
    events = watch(
        emu, coll, f"resourceVersion={rv}&allowWatchBookmarks=true", 3, lambda e: e["type"] == "BOOKMARK"
    )
    types = [e["type"] for e in events]
    assert "MODIFIED" in types and "BOOKMARK" in types, types
    # a streaming list: the current objects, then a bookmark marking their end
    query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    events = watch(emu, coll, query, 500, lambda e: e["type"] == "BOOKMARK")
    end = next(i for i, e in enumerate(events) if e["type"] == "BOOKMARK")
    assert events[end]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert name in [e["object"]["metadata"]["name"] for e in events[:end]]
    code, _ = call(emu, "DELETE", f"{coll}/{name}", {"propagationPolicy": "Background"})
    assert code in (200, 202)


def test_a_namespace_that_does_not_exist_is_404_and_lists_are_empty(emu) -> None:
    code, body = call(emu, "POST", "/api/v1/namespaces/nowhere/configmaps", {"metadata": {"name": "c"}})
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'namespaces "nowhere" not found')
    code, body = call(emu, "GET", "/api/v1/namespaces/nowhere/configmaps")
    assert code == 200 and body["items"] == []  # as a real API server lists a missing namespace


def test_protobuf_bodies_of_kinds_it_cannot_read_are_415(emu) -> None:
    code, body = call(
        emu,
        "POST",
        "/apis/apps/v1/namespaces/kinds/deployments",
        b"k8s\x00\x0a\x02",
        "application/vnd.kubernetes.protobuf",
    )
    assert (code, body["reason"]) == (415, "UnsupportedMediaType")
    assert body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include:"
    )


def test_namespaces_are_watched(emu) -> None:
    code, listed = call(emu, "GET", "/api/v1/namespaces")
    got: list[dict] = []
    t = threading.Thread(target=lambda: got.extend(watch(emu, "/api/v1/namespaces",
                                                         f"resourceVersion={listed['metadata']['resourceVersion']}", 1)))  # fmt: skip
    t.start()
    call(emu, "POST", "/api/v1/namespaces", {"metadata": {"name": "watched"}})
    t.join(10)
    assert got and got[0]["type"] == "ADDED" and got[0]["object"]["metadata"]["name"] == "watched"
