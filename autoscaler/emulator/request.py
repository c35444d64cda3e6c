"""What a request asks for, as kube-apiserver reads it (k8s.io/apiserver pkg/endpoints/request/requestinfo.go,
``RequestInfoFactory.NewRequestInfo``): resource requests under ``/api`` and ``/apis`` get a verb (get, list,
watch, create, update, patch, delete, deletecollection), a group, version, resource, subresource, namespace and
name; everything else is a non-resource request (``/healthz``, ``/version``, ``/openapi/v3``) with the lower-cased
HTTP method as its verb. The legacy ``/api/v1/watch/...`` prefix makes a watch."""

from __future__ import annotations

from dataclasses import dataclass

VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
TRUE = ("1", "true", "True")


@dataclass
class RequestInfo:
    path: str
    verb: str
    is_resource: bool = False
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()  # path segments after the subresource (none is served: 404)

    @property
    def group_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


def parse(method: str, path: str, query: dict[str, str]) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    verb = VERBS.get(method, method.lower())
    info = RequestInfo(path=path, verb=method.lower())
    if not parts or parts[0] not in ("api", "apis"):
        return info
    if parts[0] == "api":
        if len(parts) < 2:
            return info
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return info
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return info  # discovery of a group version
    info.is_resource = True
    info.group, info.version = group, version
    if rest[0] == "watch":  # the deprecated /api/v1/watch/... form
        verb = "watch"
        rest = rest[1:]
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        # /namespaces/<ns>/<resource>...; /namespaces/<ns>[/status|/finalize] is the namespace itself, whose
        # requests are in that namespace too (RBAC: a Role there may grant it)
        info.namespace = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    if rest:
        info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]
    info.parts = tuple(rest[3:])
    if verb == "get" and not info.name:
        verb = "watch" if query.get("watch") in TRUE else "list"
    elif verb == "get" and query.get("watch") in TRUE:
        verb = "watch"
    elif verb == "delete" and not info.name:
        verb = "deletecollection"
    info.verb = verb
    return info
