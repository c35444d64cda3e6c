"""LimitRanger and ResourceQuota admission (plugin/pkg/admission/limitranger, plugin/pkg/admission/resourcequota).

LimitRanger, on pod creation: each container without a limit or request gets the LimitRange's ``default`` and
``defaultRequest`` (annotated ``kubernetes.io/limit-ranger``); then every ``Container``, ``Pod`` and
``PersistentVolumeClaim`` limit is checked, with its messages (``maximum cpu usage per Container is 2, but limit is
4``, ``minimum memory usage per Container is 64Mi, but request is 32Mi``, ``cpu max limit to request ratio per
Container is 2, but provided ratio is 4.000000``, ``... No limit is specified``).

ResourceQuota, on create (and on a claim's resize): every quota of the namespace whose scopes select the object
must have room: ``exceeded quota: <name>, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=8,
limited: requests.nvidia.com/gpu=8``; a quota on cpu or memory makes every container state them: ``failed quota:
<name>: must specify limits.cpu for: main``. The quota's ``status.used`` is recounted from the namespace's
objects (the quota controller keeps it current for readers).
"""

from __future__ import annotations

from autoscaler.emulator.errors import forbidden
from autoscaler.model import quota as Q
from autoscaler.model.quantity import parse_quantity

VALIDATED = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "cpu", "memory")


class LimitRanger:
    def __init__(self, api) -> None:
        self.api = api

    def _ranges(self, namespace: str) -> list[dict]:
        return self.api.model.store.list("limitranges", namespace)

    def mutate(self, op: str, plural: str, obj: dict, namespace: str, sub: str) -> None:
        if plural != "pods" or op != "CREATE" or sub:
            return
        notes: list[str] = []
        for lr in self._ranges(namespace):
            for item in (lr.get("spec") or {}).get("limits") or ():
                if item.get("type") != "Container":
                    continue
                default, default_req = item.get("default") or {}, item.get("defaultRequest") or {}
                for c in (obj.get("spec") or {}).get("containers") or []:
                    res = c.setdefault("resources", {})
                    set_req, set_lim = [], []
                    for r, q in default.items():
                        if r not in (res.get("limits") or {}):
                            res.setdefault("limits", {})[r] = q
                            set_lim.append(r)
                    for r, q in default_req.items():
                        if r not in (res.get("requests") or {}):
                            res.setdefault("requests", {})[r] = q
                            set_req.append(r)
                    for r in set_lim:  # a defaulted limit without a request gives the request too
                        if r not in (res.get("requests") or {}):
                            res.setdefault("requests", {})[r] = res["limits"][r]
                            set_req.append(r)
                    if set_req:
                        notes.append(f"{', '.join(sorted(set_req))} request for container {c.get('name')}")
                    if set_lim:
                        notes.append(f"{', '.join(sorted(set_lim))} limit for container {c.get('name')}")
        if notes:
            meta = obj.setdefault("metadata", {})
            meta.setdefault("annotations", {})["kubernetes.io/limit-ranger"] = (
                "LimitRanger plugin set: " + "; ".join(notes)
            )

    def validate(self, op: str, plural: str, obj: dict, namespace: str, sub: str) -> None:
        if sub or op != "CREATE" or plural not in ("pods", "persistentvolumeclaims"):
            return
        errors: list[str] = []
        for lr in self._ranges(namespace):
            for item in (lr.get("spec") or {}).get("limits") or ():
                kind = item.get("type")
                if plural == "pods" and kind == "Container":
                    for c in (obj.get("spec") or {}).get("containers") or []:
                        res = c.get("resources") or {}
                        errors += _check(
                            item, "Container", res.get("requests") or {}, res.get("limits") or {}
                        )
                elif plural == "pods" and kind == "Pod":
                    spec = obj.get("spec") or {}
                    req = {k: v for k, v in Q._containers_resources(spec, "requests").items()}
                    lim = {k: v for k, v in Q._containers_resources(spec, "limits").items()}
                    errors += _check(item, "Pod", req, lim)
                elif plural == "persistentvolumeclaims" and kind == "PersistentVolumeClaim":
                    res = (obj.get("spec") or {}).get("resources") or {}
                    errors += _check(
                        item, "PersistentVolumeClaim", res.get("requests") or {}, res.get("limits") or {}
                    )
        if errors:
            raise forbidden("", plural, (obj.get("metadata") or {}).get("name", ""),
                            errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")  # fmt: skip


def _q(value) -> float:
    return parse_quantity(value) if isinstance(value, str | int | float) else float(value)


def _check(item: dict, kind: str, request: dict, limit: dict) -> list[str]:
    out = []
    for r, enforced in (item.get("min") or {}).items():
        if r not in request:
            out.append(f"minimum {r} usage per {kind} is {enforced}.  No request is specified")
        elif _q(request[r]) < _q(enforced):
            out.append(f"minimum {r} usage per {kind} is {enforced}, but request is {request[r]}")
        elif r in limit and _q(limit[r]) < _q(enforced):
            out.append(f"minimum {r} usage per {kind} is {enforced}, but limit is {limit[r]}")
    for r, enforced in (item.get("max") or {}).items():
        if r not in limit:
            out.append(f"maximum {r} usage per {kind} is {enforced}.  No limit is specified")
        elif _q(limit[r]) > _q(enforced):
            out.append(f"maximum {r} usage per {kind} is {enforced}, but limit is {limit[r]}")
        elif r in request and _q(request[r]) > _q(enforced):
            out.append(f"maximum {r} usage per {kind} is {enforced}, but request is {request[r]}")
    for r, enforced in (item.get("maxLimitRequestRatio") or {}).items():
        req, lim = request.get(r), limit.get(r)
        if req is None or _q(req) == 0:
            out.append(f"{r} max limit to request ratio per {kind} is {enforced}, but no request is specified or "
                       "request is 0")  # fmt: skip
        elif lim is None or _q(lim) == 0:
            out.append(f"{r} max limit to request ratio per {kind} is {enforced}, but no limit is specified or "
                       "limit is 0")  # fmt: skip
        elif _q(lim) / _q(req) > _q(enforced):
            out.append(f"{r} max limit to request ratio per {kind} is {enforced}, but provided ratio is "
                       f"{_q(lim) / _q(req):f}")  # fmt: skip
    return out


class ResourceQuota:
    def __init__(self, api) -> None:
        self.api = api

    def objects(self, namespace: str, kinds: set[tuple[str, str]]) -> dict[tuple[str, str], list[dict]]:
        from autoscaler.emulator import resources as R

        out = {}
        for plural, group in kinds:
            res = next((r for r in R.RESOURCES if r.plural == plural and r.group == group), None)
            if res is not None and res.namespaced:
                out[(plural, group)] = self.api.model.store.list(res.store, namespace)
        return out

    def validate(self, op: str, res, obj: dict, old: dict | None, namespace: str | None, sub: str) -> None:
        if not namespace or sub:
            return
        quotas = self.api.model.store.list("resourcequotas", namespace)
        if not quotas:
            return
        plural, group = res.plural, res.group
        if op == "UPDATE":
            if plural != "persistentvolumeclaims" or old is None:
                return
            delta = {k: v - Q.pvc_usage(old).get(k, 0.0) for k, v in Q.pvc_usage(obj).items()}
            delta = {k: v for k, v in delta.items() if v > 0}
            if not delta:
                return
        elif op == "CREATE":
            delta = Q.object_usage(plural, group, obj)
        else:
            return
        name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName", "")
        for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
            if not Q.quota_selects(quota, plural, obj):
                continue
            hard = {k: parse_quantity(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}
            qname = quota["metadata"]["name"]
            if plural == "pods":
                missing = _missing(obj, [r for r in hard if r in VALIDATED])
                if missing:
                    raise forbidden("", plural, name, f"failed quota: {qname}: must specify {missing}")
            used = Q.used(quota, self.objects(namespace, Q.counted_kinds(quota)))
            exceeded = sorted(r for r, q in delta.items() if r in hard and used.get(r, 0.0) + q > hard[r])
            if exceeded:
                raw = (quota.get("spec") or {}).get("hard") or {}

                def show(values, fmt=True, exceeded=exceeded):
                    return ",".join(
                        f"{r}={Q.format_quantity(r, values[r]) if fmt else values[r]}" for r in exceeded
                    )

                raise forbidden("", plural, name, f"exceeded quota: {qname}, requested: {show(delta)}, used: "
                                f"{show(used)}, limited: {show(raw, fmt=False)}")  # fmt: skip


def _missing(pod: dict, required: list[str]) -> str:
    spec = pod.get("spec") or {}
    missing: dict[str, list[str]] = {}
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        res = c.get("resources") or {}
        for r in required:
            kind, _, resource = r.partition(".")
            if not resource:
                kind, resource = "requests", r
            if resource not in (res.get(kind) or {}):
                missing.setdefault(r, []).append(c.get("name", ""))
    return "; ".join(f"{r} for: {','.join(sorted(names))}" for r, names in sorted(missing.items()))
