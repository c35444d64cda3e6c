"""The Kubernetes REST API over a ClusterModel, independent of the HTTP server.

``KubeApi.handle(method, path, query, content_type, body)`` returns a :class:`Reply` (status and JSON body),
a :class:`WatchStream` (JSON lines) or a ``logs.Text``. A request goes the way kube-apiserver's handler chain
takes it (k8s.io/apiserver pkg/server/config.go ``DefaultBuildHandlerChain``): the caller's identity (set by the
HTTP server from its client certificate or bearer token, :mod:`autoscaler.emulator.auth.authn`; a direct call is
the insecure port's ``system:unsecured`` in ``system:masters``), impersonation, authorization (RBAC,
:mod:`autoscaler.emulator.auth.rbac`), then the resource handler: decoding, defaulting, admission
(:mod:`autoscaler.emulator.admission`), validation and storage (:mod:`autoscaler.emulator.writes`). Every call
holds ``model.lock`` and first advances the model to its clock's now, so a wall-clock model is current whenever
it is looked at.

Per-request context the HTTP layer passes (the identity, the ``Impersonate-*`` and ``Accept`` headers) and what
it gets back (``Warning`` headers) live in ``api.ctx``, a thread-local, so that ``handle``'s signature stays as
tests wrap it.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import pickle
import threading
import time

import yaml

from autoscaler.emulator import logs, protobuf, schema, writes
from autoscaler.emulator import resources as R
from autoscaler.emulator.admission import Admission
from autoscaler.emulator.auth import impersonation
from autoscaler.emulator.auth.pki import Pki
from autoscaler.emulator.auth.rbac import Authorizer
from autoscaler.emulator.auth.tokens import TokenIssuer
from autoscaler.emulator.auth.user import INSECURE, UserInfo
from autoscaler.emulator.errors import (
    BadRequest,
    Gone,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    TooLargeResourceVersion,
    UnsupportedMediaType,
    not_found,
    status_body,
)
from autoscaler.emulator.events_v1 import to_events_v1
from autoscaler.emulator.patch import APPLY_PATCH, PATCH_TYPES
from autoscaler.emulator.reply import Reply, WatchStream
from autoscaler.emulator.request import RequestInfo, parse
from autoscaler.emulator.selectors import parse_field_selector, parse_label_selector
from autoscaler.emulator.tables import table, wants_table
from autoscaler.emulator.watch import WatchHub
from autoscaler.model import ClusterModel
from autoscaler.model.disruption import budget_status
from autoscaler.model.store import StoreError
from clusterspec.scheduler import GANG_SCHEDULER

__all__ = [
    "Gone",
    "KubeApi",
    "MethodNotAllowed",
    "Reply",
    "TooLargeResourceVersion",
    "WatchStream",
    "status_body",
]

DEFAULT_WATCH_TIMEOUT_S = 1800
JSON_TYPES = ("application/json", "")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
PROTOBUF = "application/vnd.kubernetes.protobuf"


def json_copy(value):
    """A copy of a stored (JSON-shaped) object: what ``copy.deepcopy`` gives, through pickle's C code at about a
    quarter of its cost, which a list of 50,000 kubectl-sized pods needs (docs/benchmarks.md, "Live controller")."""
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


def _key(obj: dict) -> tuple[str, str]:
    return (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


class RequestContext(threading.local):
    """What the HTTP layer knows of the request being handled on this thread, and what it sends back."""

    user: UserInfo | None = None
    headers: dict | None = None
    warnings: list[str]

    def __init__(self) -> None:
        self.warnings = []


class KubeApi:
    def __init__(
        self,
        model: ClusterModel,
        server_address: str = "127.0.0.1",
        watch_history: int = 10_000,
        pki: Pki | None = None,
    ) -> None:
        self.model = model
        self.server_address = server_address
        self.hub = WatchHub(model, watch_history)
        self.bookmark_interval_s = 1.0
        self.stopping = False
        self.logs = logs.ContainerLogs()  # what the emulated containers print (pods/{name}/log)
        self.ctx = RequestContext()
        self.minor = R.K8S_MINOR
        self.pki = pki or Pki()
        self.tokens = TokenIssuer(self)
        self.authorizer = Authorizer(model)
        self.admission = Admission(self)
        self.writes = writes.Writes(self)
        self.writes.bootstrap()
        self._wire_model()

    def _wire_model(self) -> None:
        """The model's controllers create and delete through this API server (admission, as their requests to a
        real one); the CA and signers are the server's."""
        from autoscaler.emulator.auth.user import CONTROLLER_MANAGER

        def api_create(kind: str, obj: dict) -> dict:
            res = R.BY_STORE[kind]
            saved = self.ctx.warnings
            self.ctx.warnings = []  # a controller's warnings are not the request's that woke it
            try:
                return self.writes.create_object(
                    res, obj["metadata"].get("namespace"), obj, CONTROLLER_MANAGER
                )
            finally:
                self.ctx.warnings = saved

        def api_delete(kind: str, obj: dict, policy: str) -> None:
            self.writes.delete_object(R.BY_STORE[kind], obj, policy)

        m = self.model
        with m.lock:
            m.api_create, m.api_delete = api_create, api_delete
            m.cluster_ca_pem = self.pki.ca_pem
            m.legacy_token = self.tokens.legacy
            m.sign_csr = self.sign_csr
            # only what is deployed schedules: the gang scheduler once its pods run (model/controllers/schedulers.py)
            m.deployed_schedulers = True
            # the kubelet pulls images before containers start (model/images.py) on a wall-clock model; a virtual
            # clock's tests start containers at once unless they ask (model.image_pulls = True)
            m.image_pulls = not getattr(m.clock, "virtual", False)
            m.scheduler.set_scheduler(GANG_SCHEDULER, False)
            for ns in m.store.list("namespaces"):
                m.controllers.listener("namespaces", "MODIFIED", ns)
            m.settle()

    def sign_csr(self, csr: dict) -> str:
        """kube-controller-manager's kube-apiserver-client signer with the cluster CA: the request's subject,
        client auth, for ``expirationSeconds`` (at most a year). Base64 of the PEM certificate."""
        import datetime as dt

        from cryptography import x509

        from autoscaler.emulator.auth.pki import CERT_DURATION, cert_pem

        spec = csr.get("spec") or {}
        request = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
        seconds = spec.get("expirationSeconds")
        duration = min(dt.timedelta(seconds=seconds), CERT_DURATION) if seconds else CERT_DURATION
        cert = self.pki.issue(request.public_key(), "", subject=request.subject, duration=duration,
                              usages=tuple(spec.get("usages") or ()))  # fmt: skip
        return base64.b64encode(cert_pem(cert)).decode()

    # --- entry point -------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, str], content_type: str, body: bytes):
        """One request. Tests wrap this method to inject faults; keep its signature."""
        self.ctx.warnings = []
        try:
            return self._handle(method.upper(), path, query, content_type or "", body)
        except StoreError as e:
            details = {"name": getattr(e, "name", ""), "kind": getattr(e, "kind", "")}
            details = {k: v for k, v in details.items() if v} | getattr(e, "details", {})
            return Reply(e.code, status_body(e.code, e.reason, str(e), details))

    def user(self) -> UserInfo:
        return self.ctx.user or INSECURE

    def _handle(self, method, path, query, content_type, body):
        info = parse(method, path, query)
        user = self.user()
        headers = self.ctx.headers or {}
        if any(k.lower().startswith("impersonate-") for k in headers):
            with self.model.lock:
                user = impersonation.impersonate(self.authorizer, user, headers)
            self.ctx.user = user
        if not info.is_resource:
            return self._non_resource(method, path, query, info, user)
        res = R.BY_PATH.get((info.group, info.version, info.resource))
        if (
            res is None
            or info.parts
            or (not res.namespaced and info.namespace and info.resource != "namespaces")
            or (res.namespaced and info.name and not info.namespace)
        ):
            raise NotFound("the server could not find the requested resource")
        payload = self._decode(method, info, res, content_type, body, query)
        with self.model.lock:
            self.model.advance()
            allowed, reason = self.authorizer.authorize(user, info)
            if not allowed:
                raise self.authorizer.forbidden(user, info, reason)
            result = self._dispatch(info, res, payload, query, content_type)
            if info.verb not in ("get", "list", "watch"):
                self.model.settle()  # the controllers see the write before the reply (their work queues drain)
            return result

    def _decode(self, method, info: RequestInfo, res: R.Resource, content_type: str, body: bytes, query):
        if not body:
            return None
        ctype = content_type.split(";")[0].strip().lower()
        if method == "PATCH":
            if ctype not in PATCH_TYPES:
                raise UnsupportedMediaType(
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(PATCH_TYPES)
                )
            if res.custom and ctype == "application/strategic-merge-patch+json":
                raise UnsupportedMediaType(
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
                )
            if ctype == APPLY_PATCH and not query.get("fieldManager"):
                raise BadRequest("PATCH request with apply content type requires fieldManager")
        elif ctype == PROTOBUF and method in ("POST", "PUT"):
            decoded = protobuf.decode(body)
            if decoded is not None:
                return decoded
            # other kinds need the generated Go types, which no well-kept Python library carries: refused as a
            # server without that serializer refuses it (apimachinery negotiation.NewUnsupportedMediaTypeError)
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml"
            )
        elif ctype not in JSON_TYPES + YAML_TYPES:
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml"
            )
        try:
            if ctype in YAML_TYPES or ctype == APPLY_PATCH:
                return yaml.safe_load(body)
            return json.loads(body)
        except (ValueError, yaml.YAMLError) as e:
            kind = res.kind
            raise BadRequest(
                f"{kind} in version {res.version!r} cannot be handled as a {kind}: {e}"
            ) from None

    def negotiate(self, accept: str) -> str:
        """The media type of the reply: JSON (or YAML when asked for only that); 406 when neither is accepted."""
        accept = (accept or "").lower()
        if not accept or "json" in accept or "*/*" in accept:
            return "application/json"
        if "yaml" in accept:
            return "application/yaml"
        raise NotAcceptable("only the following media types are accepted: application/json, application/yaml")

    # --- non-resource requests ---------------------------------------------------------------------------
    def _non_resource(self, method: str, path: str, query: dict, info: RequestInfo, user: UserInfo):
        parts = [p for p in path.split("/") if p]
        norm = "/" + "/".join(parts)
        with self.model.lock:
            allowed, reason = self.authorizer.authorize(user, info)
            if not allowed:
                raise self.authorizer.forbidden(user, info, reason)
        if method not in ("GET", "HEAD"):
            raise MethodNotAllowed(f"{method} is not allowed on {norm}")
        if norm in ("/", "/healthz", "/livez", "/readyz") or norm.startswith(
            ("/healthz/", "/livez/", "/readyz/")
        ):
            return Reply(200, {"status": "ok"})
        static = self._discovery(parts)
        if static is not None:
            return Reply(200, static)
        raise NotFound("the server could not find the requested resource")

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
        if parts == ["openapi", "v3"]:
            return schema.openapi_root(R.RESOURCES)
        if len(parts) >= 4 and parts[:2] == ["openapi", "v3"]:
            rest = parts[2:]
            group, version = (
                ("", rest[1]) if rest[0] == "api" else (rest[1], rest[2] if len(rest) > 2 else "")
            )
            return schema.openapi_document(self.minor, R.RESOURCES, group, version)
        return None

    # --- dispatch ----------------------------------------------------------------------------------------
    def _dispatch(self, info: RequestInfo, res: R.Resource, payload, query: dict, content_type: str):
        verb, ns, name, sub = info.verb, info.namespace or None, info.name or None, info.subresource
        if res.plural == "namespaces":
            ns = None
        if verb == "watch":
            if name:
                query = {**query, "fieldSelector": ",".join(filter(None, [query.get("fieldSelector"),
                                                                           f"metadata.name={name}"]))}  # fmt: skip
            return self._watch(res, ns, query)
        if verb == "list":
            return Reply(200, self._list(res, ns, query))
        if verb not in res.verbs and not sub:
            raise MethodNotAllowed(f"{verb} is not supported on {res.group_resource}")
        w = self.writes
        if sub == "log" and res.plural == "pods" and verb == "get":
            return logs.serve(self, ns, name, query)
        if sub:
            return w.subresource(verb, res, ns, name, sub, payload, query, content_type)
        if verb == "get":
            return Reply(200, self._get(res, ns, name))
        if verb == "create":
            return w.create(res, ns, payload, query)
        if verb == "update":
            return w.update(res, ns, name, payload, query)
        if verb == "patch":
            return w.patch(res, ns, name, payload, content_type, query)
        if verb == "delete":
            return w.delete(res, ns, name, payload, query)
        if verb == "deletecollection":
            return w.delete_collection(res, ns, payload, query)
        raise MethodNotAllowed(f"{verb} is not supported")

    def as_table(self, reply: Reply, accept: str) -> Reply:
        """The reply as a meta.k8s.io Table when the client asked for one (kubectl's default output)."""
        body = reply.body
        if not wants_table(accept) or reply.status != 200 or "metadata" not in body:
            return reply
        if body.get("kind") in ("Status", "APIResourceList", "APIGroup", "APIGroupList", "APIVersions"):
            return reply
        res = next((r for r in R.RESOURCES if body.get("kind") in (r.kind, f"{r.kind}List")), None)
        plural = res.plural if res else ""
        if body["kind"].endswith("List"):
            objects, meta = body.get("items", []), body["metadata"]
        else:
            objects, meta = [body], {"resourceVersion": body["metadata"].get("resourceVersion", "")}
        return Reply(200, table(plural, objects, meta, self.model.now()), reply.headers)

    # --- objects -----------------------------------------------------------------------------------------
    def _out(self, res: R.Resource, obj: dict) -> dict:
        """What the API shows for a stored object (a copy)."""
        if res.group == "events.k8s.io":
            return to_events_v1(obj)
        out = json_copy(obj)
        out["apiVersion"], out["kind"] = res.api_version, res.kind
        return out

    def _objects(self, res: R.Resource, namespace: str | None) -> list[dict]:
        if res.store == "poddisruptionbudgets":
            objs = self.model.pdbs()
            return [o for o in objs if namespace is None or o["metadata"]["namespace"] == namespace]
        return self.model.store.list(res.store, namespace if res.namespaced else None)

    def _get(self, res: R.Resource, namespace: str | None, name: str) -> dict:
        obj = self.model.store.find(res.store, namespace, name)
        if obj is None:
            raise not_found(res.group, res.plural, name)
        if res.store == "poddisruptionbudgets":
            obj["status"] = budget_status(obj, self.model.store.list("pods", obj["metadata"]["namespace"]))
        return self._out(res, obj)

    def _list(self, res: R.Resource, namespace: str | None, query: dict) -> dict:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), res.store)
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
        else:
            self._check_rv_match(query)
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

    def _check_rv_match(self, query: dict) -> None:
        """``resourceVersion`` with ``resourceVersionMatch=Exact`` must be one the server still has; ``NotOlderThan``
        (or unset) is served from the current state once the server has reached it."""
        rv = query.get("resourceVersion")
        if not rv or rv == "0":
            return
        try:
            wanted = int(rv)
        except ValueError:
            raise BadRequest(f"invalid resourceVersion {rv!r}") from None
        if wanted > self.model.store.resource_version:
            self._wait_for(wanted)

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
        """A watch, as the watch cache serves it: from ``resourceVersion`` (unset or ``0``: the current objects as
        ADDED first), with bookmarks when asked; ``sendInitialEvents=true`` (client-go's WatchList, streaming lists:
        KEP-3157) sends the current objects and then a BOOKMARK annotated ``k8s.io/initial-events-end``."""
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), res.store)
        timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT_S)
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true", "True")
        initial_events = query.get("sendInitialEvents") in ("1", "true", "True")
        if initial_events and (query.get("resourceVersionMatch") != "NotOlderThan" or not bookmarks):
            raise BadRequest(
                "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan and "
                "allowWatchBookmarks is set to true"
            )
        rv_param = query.get("resourceVersion") or ""
        hub = self.hub

        def matches(obj: dict) -> bool:
            if res.namespaced and namespace is not None and obj["metadata"].get("namespace") != namespace:
                return False
            return labels(obj["metadata"].get("labels")) and fields(obj)

        initial: list[dict] = []
        if rv_param in ("", "0") or initial_events:
            if initial_events and rv_param not in ("", "0"):
                self._wait_for(int(rv_param))
            last = self.model.store.resource_version
            initial = [
                {"type": "ADDED", "object": self._out(res, o)}
                for o in sorted(self._objects(res, namespace), key=_key)
                if matches(o)
            ]
            if initial_events:
                initial.append(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": res.kind,
                            "apiVersion": res.api_version,
                            "metadata": {
                                "resourceVersion": str(last),
                                "annotations": {"k8s.io/initial-events-end": "true"},
                            },
                        },
                    }
                )
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

    # --- helpers for the rest of the emulator ------------------------------------------------------------
    def warn(self, text: str) -> None:
        """A ``Warning`` header for the client (kubectl prints ``Warning: <text>``)."""
        if text not in self.ctx.warnings:
            self.ctx.warnings.append(text)

    def deepcopy(self, obj):
        return copy.deepcopy(obj)
