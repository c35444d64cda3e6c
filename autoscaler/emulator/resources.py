"""The resources the emulator serves and the discovery documents kubectl and client-go read."""

from __future__ import annotations

from dataclasses import dataclass

K8S_VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.4",
    "gitCommit": "a78aa47129b8539636eb86a9d00e31b2720fe06b",
    "gitTreeState": "clean",
    "buildDate": "2024-12-10T18:30:00Z",
    "goVersion": "go1.22.10",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass(frozen=True)
class Resource:
    group: str  # "" for core
    version: str
    plural: str
    kind: str
    namespaced: bool
    store: str  # the model store's kind
    verbs: tuple[str, ...]
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_RW = ("create", "delete", "get", "list", "patch", "update", "watch")
RESOURCES = [
    Resource(
        "", "v1", "pods", "Pod", True, "pods", ("create", "delete", "get", "list", "patch", "watch"), ("po",)
    ),
    Resource(
        "",
        "v1",
        "nodes",
        "Node",
        False,
        "nodes",
        ("delete", "get", "list", "patch", "update", "watch"),
        ("no",),
    ),
    Resource("", "v1", "events", "Event", True, "events", _RW, ("ev",)),
    Resource("", "v1", "namespaces", "Namespace", False, "namespaces", ("get", "list"), ("ns",)),
    Resource("", "v1", "configmaps", "ConfigMap", True, "configmaps", _RW, ("cm",)),
    Resource(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        "poddisruptionbudgets",
        _RW,
        ("pdb",),
    ),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, "leases", _RW),
    Resource("events.k8s.io", "v1", "events", "Event", True, "events", _RW, ("ev",)),
    Resource(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        True,
        "daemonsets",
        ("create", "delete", "get", "list", "watch"),
        ("ds",),
    ),
]
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
# subresources listed in discovery: (parent plural, sub, group, version, kind, verbs)
SUBRESOURCES = {
    ("", "v1"): [
        ("pods", "eviction", "policy", "v1", "Eviction", ("create",)),
        ("pods", "binding", "", "v1", "Binding", ("create",)),
        ("pods", "log", "", "v1", "Pod", ("get",)),  # logs.py
    ]
}


def _singular(kind: str) -> str:
    return kind.lower()


def resource_list(group: str, version: str) -> dict | None:
    """An APIResourceList for /api/v1 or /apis/<group>/<version>; None when not served."""
    rs = [r for r in RESOURCES if r.group == group and r.version == version]
    if not rs:
        return None
    items = []
    for r in rs:
        entry = {
            "name": r.plural,
            "singularName": _singular(r.kind),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        items.append(entry)
    for parent, sub, g, v, kind, verbs in SUBRESOURCES.get((group, version), []):
        entry = {
            "name": f"{parent}/{sub}",
            "singularName": "",
            "namespaced": True,
            "kind": kind,
            "verbs": list(verbs),
        }
        if g:
            entry.update(group=g, version=v)
        items.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }


def api_versions(server_address: str) -> dict:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list() -> dict:
    groups: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in groups.setdefault(r.group, []):
            groups[r.group].append(r.version)
    out = []
    for name, versions in groups.items():
        gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        out.append({"name": name, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def api_group(name: str) -> dict | None:
    for g in api_group_list()["groups"]:
        if g["name"] == name:
            return {"kind": "APIGroup", "apiVersion": "v1", **g}
    return None
