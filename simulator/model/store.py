"""The Kubernetes object store: objects by kind and (namespace, name), one resourceVersion counter, listeners.

Every change bumps the counter, stamps ``metadata.resourceVersion`` and tells the listeners
``(kind, event_type, obj)`` with event_type ADDED, MODIFIED or DELETED, as a watch would. Objects are stored
and handed out as live dicts: readers must not mutate them (a server copies what it serves).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from simulator.model.clock import iso

# The built-in cluster-scoped kinds (kube-apiserver's: `kubectl api-resources --namespaced=false`); custom
# resources add theirs per store (``ObjectStore.cluster_scoped``).
CLUSTER_SCOPED = frozenset(
    {
        "nodes", "namespaces", "persistentvolumes", "storageclasses", "csinodes", "csidrivers",
        "volumeattachments", "volumeattributesclasses", "clusterroles", "clusterrolebindings",
        "certificatesigningrequests", "tokenreviews", "selfsubjectreviews", "selfsubjectaccessreviews",
        "selfsubjectrulesreviews", "subjectaccessreviews", "priorityclasses", "runtimeclasses", "ingressclasses",
        "mutatingwebhookconfigurations", "validatingwebhookconfigurations", "validatingadmissionpolicies",
        "validatingadmissionpolicybindings", "customresourcedefinitions", "deviceclasses", "resourceslices",
    }
)  # fmt: skip


class StoreError(Exception):
    """A Kubernetes API error: ``reason`` and ``code`` as a Status object carries them."""

    reason = "InternalError"
    code = 500


class NotFound(StoreError):
    reason, code = "NotFound", 404


class AlreadyExists(StoreError):
    reason, code = "AlreadyExists", 409


class Conflict(StoreError):
    reason, code = "Conflict", 409


class Invalid(StoreError):
    reason, code = "Invalid", 422


Listener = Callable[[str, str, dict], None]
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery utilrand: what generateName suffixes are made of


def _suffix(n: int) -> str:
    """Five characters of the generateName alphabet, from a counter (deterministic, distinct for 27**5 names)."""
    out = []
    n = (n * 2654435761) % (27**5)  # spread consecutive counters over the space
    for _ in range(5):
        n, r = divmod(n, 27)
        out.append(_ALPHABET[r])
    return "".join(out)


class ObjectStore:
    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._objects: dict[str, dict[tuple[str, str], dict]] = {}
        self._rv = 0
        self._uids = itertools.count(1)
        self._names = itertools.count(1)
        self.listeners: list[Listener] = []
        self.cluster_scoped: set[str] = set(CLUSTER_SCOPED)

    @property
    def resource_version(self) -> int:
        return self._rv

    def _key(self, kind: str, namespace: str | None, name: str) -> tuple[str, str]:
        return ("" if kind in self.cluster_scoped else (namespace or "default"), name)

    def _stamp(self, kind: str, event: str, obj: dict) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        for fn in self.listeners:
            fn(kind, event, obj)

    def kind(self, kind: str) -> dict[tuple[str, str], dict]:
        return self._objects.setdefault(kind, {})

    def get(self, kind: str, namespace: str | None, name: str) -> dict:
        obj = self.kind(kind).get(self._key(kind, namespace, name))
        if obj is None:
            raise NotFound(f'{kind} "{name}" not found')
        return obj

    def find(self, kind: str, namespace: str | None, name: str) -> dict | None:
        return self.kind(kind).get(self._key(kind, namespace, name))

    def list(self, kind: str, namespace: str | None = None) -> list[dict]:
        objs = self.kind(kind).values()
        if namespace is None:
            return list(objs)
        return [o for o in objs if o["metadata"].get("namespace") == namespace]

    def next_uid(self) -> str:
        """A uid for an object about to be created (the Job strategy puts it in the selector first)."""
        return f"{next(self._uids):08x}-6d6f-4465-8c00-000000000000"

    def create(self, kind: str, obj: dict, uid: str | None = None) -> dict:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise Invalid(f"{kind}: metadata.name or metadata.generateName is required")
            meta["name"] = f"{meta['generateName']}{_suffix(next(self._names))}"
        if kind not in self.cluster_scoped:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        key = self._key(kind, meta.get("namespace"), meta["name"])
        table = self.kind(kind)
        if key in table:
            raise AlreadyExists(f'{kind} "{meta["name"]}" already exists')
        meta["uid"] = uid or self.next_uid()
        meta["creationTimestamp"] = iso(self._now())
        table[key] = obj
        self._stamp(kind, "ADDED", obj)
        return obj

    def modified(self, kind: str, obj: dict) -> dict:
        """Record an in-place change of a stored object."""
        self._stamp(kind, "MODIFIED", obj)
        return obj

    def replace(self, kind: str, obj: dict, check_version: bool = True) -> dict:
        """Replace the stored object; with check_version, a stale metadata.resourceVersion is a Conflict."""
        meta = obj.get("metadata") or {}
        current = self.get(kind, meta.get("namespace"), meta.get("name", ""))
        sent = meta.get("resourceVersion")
        if check_version and sent and sent != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind} "{meta["name"]}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
        for k in ("uid", "creationTimestamp", "namespace"):
            if k in current["metadata"]:
                meta[k] = current["metadata"][k]
        table = self.kind(kind)
        table[self._key(kind, meta.get("namespace"), meta["name"])] = obj
        self._stamp(kind, "MODIFIED", obj)
        return obj

    def delete(self, kind: str, namespace: str | None, name: str) -> dict:
        obj = self.kind(kind).pop(self._key(kind, namespace, name), None)
        if obj is None:
            raise NotFound(f'{kind} "{name}" not found')
        self._stamp(kind, "DELETED", obj)
        return obj
