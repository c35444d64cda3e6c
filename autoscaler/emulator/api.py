"""The Kubernetes REST API over a ClusterModel, independent of the HTTP server.

``KubeApi.handle(method, path, query, content_type, body)`` returns a :class:`Reply` (status and JSON body)
or a :class:`WatchStream` (JSON lines). Every call holds ``model.lock`` and first advances the model to its
clock's now, so a wall-clock model is current whenever it is looked at.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import yaml

from autoscaler.emulator import logs
from autoscaler.emulator import resources as R
from autoscaler.emulator.events_v1 import from_events_v1, to_events_v1
from autoscaler.emulator.patch import APPLY_PATCH, apply_patch
from autoscaler.emulator.selectors import BadRequest, parse_field_selector, parse_label_selector
from autoscaler.emulator.tables import table, wants_table
from autoscaler.emulator.validation import validate
from autoscaler.emulator.watch import WatchHub
from autoscaler.model import ClusterModel
from autoscaler.model.disruption import budget_status
from autoscaler.model.store import Conflict, Invalid, NotFound, StoreError

DEFAULT_WATCH_TIMEOUT_S = 1800
# kinds whose status is written only through the status subresource: a PUT or PATCH of the object itself keeps the
# stored status, one of /status keeps everything but the status (the registries' PrepareForUpdate and
# PrepareForUpdate of their status strategies, pkg/registry/core/node/strategy.go, pkg/registry/policy/poddisruptionbudget)
STATUS_SUBRESOURCE = {"nodes", "poddisruptionbudgets"}


@dataclass
class Reply:
    status: int
    body: dict
    headers: dict = field(default_factory=dict)


@dataclass
class WatchStream:
    events: Iterator[dict]


class Gone(StoreError):
    reason, code = "Expired", 410


class TooLargeResourceVersion(StoreError):
    """A list or watch from a resourceVersion the server has not reached (a client that talked to a server before
    a restart or an etcd restore): kube-apiserver waits up to 3 s for it, then answers 504 Timeout with the cause
    ResourceVersionTooLarge (apimachinery errors.NewTooLargeResourceVersionError), on which clients relist."""

    reason, code = "Timeout", 504
    wait_s = 3.0

    def __init__(self, wanted: int, current: int):
        super().__init__(f"Timeout: Too large resource version: {wanted}, current: {current}")
        self.details = {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        }


class MethodNotAllowed(StoreError):
    reason, code = "MethodNotAllowed", 405


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def json_copy(value):
    """A copy of a stored (JSON-shaped) object: what ``copy.deepcopy`` gives, through pickle's C code at about a
    quarter of its cost, which a list of 50,000 kubectl-sized pods needs (docs/benchmarks.md, "Live controller")."""
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


def _key(obj: dict) -> tuple[str, str]:
    return (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


class KubeApi:
    def __init__(
        self, model: ClusterModel, server_address: str = "127.0.0.1", watch_history: int = 10_000
    ) -> None:
        self.model = model
        self.server_address = server_address
        self.hub = WatchHub(model, watch_history)
        self.bookmark_interval_s = 1.0
        self.stopping = False
        self._patch_type = ""  # of the subresource request being handled (under the model's lock)
        self.logs = logs.ContainerLogs()  # what the emulated containers print (pods/{name}/log)

    # --- entry point -------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, str], content_type: str, body: bytes):
        """One request. Tests wrap this method to inject faults; keep its signature."""
        try:
            return self._handle(method.upper(), path, query, content_type or "", body)
        except StoreError as e:
            details = {"name": getattr(e, "name", ""), "kind": getattr(e, "kind", "")}
            details = {k: v for k, v in details.items() if v} | getattr(e, "details", {})
            return Reply(e.code, status_body(e.code, e.reason, str(e), details))

    def _handle(self, method, path, query, content_type, body):
        parts = [p for p in path.split("/") if p]
        if (not parts or parts[0] in ("healthz", "readyz", "livez")) and method == "GET":
            return Reply(200, {"status": "ok"})
        static = self._discovery(parts)
        if static is not None:
            if method != "GET":
                raise MethodNotAllowed(f"{method} is not allowed on /{'/'.join(parts)}")
            return Reply(200, static)
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise NotFound(f"the server could not find the requested resource (/{'/'.join(parts)})")
        namespace = None
        if len(rest) >= 2 and rest[0] == "namespaces" and (len(rest) > 2 or method != "GET"):
            namespace, rest = rest[1], rest[2:]
        elif len(rest) == 2 and rest[0] == "namespaces" and group == "":
            return Reply(200, self._namespace(rest[1]))
        if not rest:
            raise NotFound("the server could not find the requested resource")
        if group == "" and rest == ["namespaces"]:
            return Reply(200, self._namespaces())
        res = R.BY_PATH.get((group, version, rest[0]))
        if res is None:
            raise NotFound(f"the server could not find the requested resource ({'/'.join(parts)})")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if res.namespaced and name is not None and namespace is None:
            raise NotFound("the server could not find the requested resource")
        payload = None
        applying = content_type.split(";")[0].strip() == APPLY_PATCH
        if body:
            try:
                payload = yaml.safe_load(body) if applying else json.loads(body)
            except (ValueError, yaml.YAMLError) as e:
                raise BadRequest(f"the request body is not {'YAML' if applying else 'JSON'}: {e}") from None
        if applying and not query.get("fieldManager"):
            raise BadRequest("PATCH request with apply content type requires fieldManager")
        with self.model.lock:
            self.model.advance()
            if method == "GET" and name is None:
                if query.get("watch") in ("1", "true", "True"):
                    return self._watch(res, namespace, query)
                return Reply(200, self._list(res, namespace, query))
            if name is None and method == "POST":
                return Reply(201, self._create(res, namespace, payload))
            if name is None:
                raise MethodNotAllowed(f"{method} is not supported on a collection")
            if sub == "log" and res.plural == "pods" and method == "GET":
                return logs.serve(self, namespace, name, query)
            if sub is not None:
                self._patch_type = content_type
                return self._subresource(method, res, namespace, name, sub, payload)
            if method == "GET":
                return Reply(200, self._get(res, namespace, name))
            if method == "PUT":
                return Reply(200, self._replace(res, namespace, name, payload))
            if method == "PATCH" and applying and not self.model.store.find(res.store, namespace, name):
                # server-side apply of an object that does not exist creates it (201), as kube-apiserver does
                applied = dict(payload or {})
                meta = applied.setdefault("metadata", {})
                if meta.get("name") not in (None, name):
                    raise BadRequest("the name of the object does not match the name in the URL")
                meta["name"] = name
                return Reply(201, self._create(res, namespace, applied))
            if method == "PATCH":
                return Reply(200, self._patch(res, namespace, name, content_type, payload))
            if method == "DELETE":
                return Reply(200, self._delete(res, namespace, name, payload))
        raise MethodNotAllowed(f"{method} is not supported")

    def as_table(self, reply: Reply, accept: str) -> Reply:
        """The reply as a meta.k8s.io Table when the client asked for one (kubectl's default output)."""
        body = reply.body
        if not wants_table(accept) or reply.status != 200 or "metadata" not in body:
            return reply
        if body.get("kind") in ("Status", "APIResourceList", "APIGroup", "APIGroupList", "APIVersions"):
            return reply
        plural = next((r.plural for r in R.RESOURCES if body.get("kind") in (r.kind, f"{r.kind}List")), "")
        if body["kind"].endswith("List"):
            objects, meta = body.get("items", []), body["metadata"]
        else:
            objects, meta = [body], {"resourceVersion": body["metadata"].get("resourceVersion", "")}
        return Reply(200, table(plural, objects, meta, self.model.now()))

    # --- discovery ---------------------------------------------------------------------------------------
    def _discovery(self, parts: list[str]) -> dict | None:
        if parts == ["version"]:
            return R.K8S_VERSION
        if parts == ["api"]:
            return R.api_versions(self.server_address)
        if parts == ["apis"]:
            return R.api_group_list()
        if parts == ["api", "v1"]:
            return R.resource_list("", "v1")
        if len(parts) == 2 and parts[0] == "apis":
            return R.api_group(parts[1])
        if len(parts) == 3 and parts[0] == "apis":
            return R.resource_list(parts[1], parts[2])
        return None

    def _namespaces(self) -> dict:
        names = {"default", "kube-system", "kube-public", "kube-node-lease"}
        for kind in ("pods", "configmaps", "leases", "events", "poddisruptionbudgets", "daemonsets"):
            names.update(o["metadata"]["namespace"] for o in self.model.store.list(kind))
        return {
            "kind": "NamespaceList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self.model.store.resource_version)},
            "items": [self._namespace(n) for n in sorted(names)],
        }

    def _namespace(self, name: str) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "uid": f"ns-{name}", "resourceVersion": "1"},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }

    # --- objects -----------------------------------------------------------------------------------------
    def _out(self, res: R.Resource, obj: dict) -> dict:
        """What the API shows for a stored object (a copy)."""
        if res.group == "events.k8s.io":
            return to_events_v1(obj)
        out = json_copy(obj)
        out["apiVersion"], out["kind"] = res.api_version, res.kind
        return out

    def _in(self, res: R.Resource, obj: dict) -> dict:
        if not isinstance(obj, dict):
            raise BadRequest(f"expected a {res.kind} object")
        if res.group == "events.k8s.io":
            obj = from_events_v1(obj)
        else:
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        obj.setdefault("metadata", {})
        return obj

    def _objects(self, res: R.Resource, namespace: str | None) -> list[dict]:
        if res.store == "poddisruptionbudgets":
            objs = self.model.pdbs()
            return [o for o in objs if namespace is None or o["metadata"]["namespace"] == namespace]
        return self.model.store.list(res.store, namespace if res.namespaced else None)

    def _get(self, res: R.Resource, namespace: str | None, name: str) -> dict:
        obj = self.model.store.find(res.store, namespace, name)
        if obj is None:
            err = NotFound(f'{res.plural}{"." + res.group if res.group else ""} "{name}" not found')
            err.name, err.kind = name, res.plural
            raise err
        if res.store == "poddisruptionbudgets":
            obj["status"] = budget_status(obj, self.model.store.list("pods", obj["metadata"]["namespace"]))
        return self._out(res, obj)

    def _list(self, res: R.Resource, namespace: str | None, query: dict) -> dict:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        list_rv = self.model.store.resource_version
        after = None
        token = query.get("continue")
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token.encode()))
                list_rv, after = int(state["rv"]), tuple(state["start"])
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise BadRequest("invalid continue token") from None
            if self.hub.too_old(res.store, list_rv):
                raise Gone(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter."
                )
        items = sorted(
            (o for o in self._objects(res, namespace) if labels(o["metadata"].get("labels")) and fields(o)),
            key=_key,
        )
        if after is not None:
            items = [o for o in items if _key(o) > after]
        meta: dict = {"resourceVersion": str(list_rv)}
        limit = int(query.get("limit") or 0)
        if limit > 0 and len(items) > limit:
            last = _key(items[limit - 1])
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"rv": list_rv, "start": last}).encode()
            ).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": meta,
            "items": [self._out(res, o) for o in items],
        }

    def _create(self, res: R.Resource, namespace: str | None, payload) -> dict:
        obj = self._in(res, payload)
        if "create" not in res.verbs:
            raise MethodNotAllowed(f"create is not supported on {res.plural}")
        meta = obj["metadata"]
        if res.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise BadRequest("the namespace of the object does not match the namespace of the request")
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        for k in ("resourceVersion", "uid", "creationTimestamp"):
            meta.pop(k, None)
        validate(res.plural, res.kind, obj)
        return self._out(res, self.model.create(res.store, obj))

    def _replace(self, res: R.Resource, namespace: str | None, name: str, payload) -> dict:
        obj = self._in(res, payload)
        if "update" not in res.verbs:
            raise MethodNotAllowed(f"update is not supported on {res.plural}")
        meta = obj["metadata"]
        if meta.get("name") not in (None, name):
            raise BadRequest("the name of the object does not match the name in the URL")
        meta["name"] = name
        if res.namespaced:
            meta["namespace"] = namespace
        current = self._get(res, namespace, name)
        if res.plural in STATUS_SUBRESOURCE:
            obj["status"] = copy.deepcopy(current.get("status") or {})
        validate(res.plural, res.kind, obj)
        return self._out(res, self.model.replace(res.store, obj, check_version=True))

    def _patch(self, res: R.Resource, namespace: str | None, name: str, content_type: str, payload) -> dict:
        current = self.model.store.get(res.store, namespace, name)
        shown = self._out(res, current)
        patched = apply_patch(shown, payload, content_type)
        meta = patched.setdefault("metadata", {})
        sent_rv = meta.get("resourceVersion")
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {res.plural} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
        if meta.get("name") != name:
            raise BadRequest("a patch may not change metadata.name")
        if res.store == "pods":
            # only metadata (labels, annotations) of a pod may change here
            for k in ("labels", "annotations"):
                if meta.get(k) != current["metadata"].get(k):
                    current["metadata"][k] = meta.get(k) or {}
            self.model.store.modified("pods", current)
            return self._out(res, current)
        if res.group == "events.k8s.io":
            patched = from_events_v1(patched)
        if res.plural in STATUS_SUBRESOURCE:
            patched["status"] = copy.deepcopy(current.get("status") or {})
        validate(res.plural, res.kind, patched)
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        return self._out(res, self.model.replace(res.store, patched, check_version=False))

    def _delete(self, res: R.Resource, namespace: str | None, name: str, options: dict | None = None) -> dict:
        if "delete" not in res.verbs:
            raise MethodNotAllowed(f"delete is not supported on {res.plural}")
        current = self._get(res, namespace, name)
        # DeleteOptions.preconditions, as the registry's store checks them (apiserver Store.Delete ->
        # Preconditions.Check): 409 Conflict when the object's uid or resourceVersion is not the one given
        pre = (options or {}).get("preconditions") if isinstance(options, dict) else None
        for key in ("uid", "resourceVersion") if isinstance(pre, dict) else ():
            want, have = pre.get(key), current["metadata"].get(key)
            if want is not None and want != have:
                raise Conflict(
                    f'Operation cannot be fulfilled on {res.plural} "{name}": Precondition failed: {key} in '
                    f"precondition: {want}, {key} in object meta: {have}"
                )
        shown = self._out(res, self.model.delete(res.store, namespace, name))
        return shown

    def _subresource(self, method: str, res: R.Resource, namespace: str, name: str, sub: str, payload):
        if res.plural == "pods" and sub == "eviction" and method == "POST":
            self._get(res, namespace, name)
            if self.model.evict_pod(namespace, name):
                return Reply(201, status_body(201, "", "", None) | {"status": "Success"})
            message = "Cannot evict pod as it would violate the pod's disruption budget."
            return Reply(
                429,
                status_body(
                    429,
                    "TooManyRequests",
                    message,
                    {"causes": [{"reason": "DisruptionBudget", "message": message}]},
                ),  # no Retry-After, as the API server sends none for budget refusals
            )
        if res.plural == "pods" and sub == "binding" and method == "POST":
            target = ((payload or {}).get("target") or {}).get("name")
            if not target:
                raise Invalid("target.name: Required value")
            self.model.bind_pod(namespace, name, target)
            return Reply(201, status_body(201, "", "", None) | {"status": "Success"})
        if sub == "status" and method == "GET":
            return Reply(200, self._get(res, namespace, name))
        if sub == "status" and method in ("PUT", "PATCH") and res.plural in STATUS_SUBRESOURCE:
            return Reply(200, self._write_status(method, res, namespace, name, payload))
        raise NotFound(f"the server could not find the requested resource ({res.plural}/{sub})")

    def _write_status(self, method: str, res: R.Resource, namespace: str | None, name: str, payload) -> dict:
        """PUT or PATCH of /status: only the status changes; a resourceVersion sent is a precondition."""
        current = self.model.store.get(res.store, namespace, name)
        shown = self._out(res, current)
        if method == "PUT":
            incoming = self._in(res, payload)
        else:
            incoming = apply_patch(shown, payload, self._patch_type)
        sent_rv = (incoming.get("metadata") or {}).get("resourceVersion")
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {res.plural} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
        updated = copy.deepcopy(shown)
        updated["status"] = incoming.get("status") or {}
        return self._out(res, self.model.replace(res.store, updated, check_version=False))

    def _wait_for(self, rv: int) -> None:
        """Wait (up to 3 s, as the watch cache does) for the store to reach ``rv``; 504 when it does not."""
        deadline = time.monotonic() + TooLargeResourceVersion.wait_s
        with self.hub.cond:
            while self.model.store.resource_version < rv:
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping:
                    raise TooLargeResourceVersion(rv, self.model.store.resource_version)
                self.hub.cond.wait(min(left, 0.5))

    # --- watch -------------------------------------------------------------------------------------------
    def _watch(self, res: R.Resource, namespace: str | None, query: dict) -> WatchStream:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true", "True")
        rv_param = query.get("resourceVersion") or ""
        hub = self.hub

        def matches(obj: dict) -> bool:
            if res.namespaced and namespace is not None and obj["metadata"].get("namespace") != namespace:
                return False
            return labels(obj["metadata"].get("labels")) and fields(obj)

        initial: list[dict] = []
        if rv_param in ("", "0"):
            last = self.model.store.resource_version
            initial = [
                {"type": "ADDED", "object": self._out(res, o)}
                for o in sorted(self._objects(res, namespace), key=_key)
                if matches(o)
            ]
        else:
            try:
                last = int(rv_param)
            except ValueError:
                raise BadRequest(f"invalid resourceVersion {rv_param!r}") from None
            if hub.too_old(res.store, last):
                gone = status_body(410, "Expired", f"too old resource version: {last} ({hub._oldest})")
                return WatchStream(iter([{"type": "ERROR", "object": gone}]))
            self._wait_for(last)

        return WatchStream(
            hub.stream(
                res.store,
                last,
                initial,
                lambda obj: self._out(res, obj) if matches(obj) else None,
                {"kind": res.kind, "apiVersion": res.api_version} if bookmarks else None,
                timeout,
                self.bookmark_interval_s,
                lambda: self.stopping,
            )
        )
