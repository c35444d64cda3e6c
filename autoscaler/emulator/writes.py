"""Writes as kube-apiserver's generic registry does them (k8s.io/apiserver pkg/registry/generic/registry/store.go,
pkg/endpoints/handlers/{create,update,patch,delete}.go), for every kind:

- **create**: decode (unknown fields dropped; refused under ``fieldValidation=Strict``), defaults, mutating
  admission, a name from ``generateName`` (5 random characters), validation, validating admission, then store;
  ``dryRun=All`` does all of it but the storing. ``metadata.generation`` starts at 1.
- **update** (PUT) and **patch**: a ``metadata.resourceVersion`` sent is a precondition (409 Conflict when stale);
  uid, creationTimestamp, namespace and name stay; a kind with a status subresource keeps its stored status (and
  its /status keeps everything else); ``generation`` goes up when the spec changes; immutable fields are checked;
  server-side apply (``application/apply-patch+yaml``) creates a missing object.
- **delete**: preconditions (uid, resourceVersion), ``propagationPolicy`` (Background by default, Orphan for
  ``batch/v1`` Jobs and core ReplicationControllers, as their strategies' ``DefaultGarbageCollectionPolicy``):
  Foreground and Orphan add the ``foregroundDeletion``/``orphan`` finalizers; an object with finalizers gets a
  ``deletionTimestamp`` and stays (202) until they are removed, then goes; the garbage collector
  (autoscaler/model/controllers/gc.py) deletes or orphans the dependents. A namespace goes Terminating and the
  namespace controller empties it first.
- **subresources**: ``status``, ``scale`` (autoscaling/v1 Scale), pods' ``eviction`` (PodDisruptionBudgets: 429),
  ``binding``, serviceaccounts' ``token`` (TokenRequest), CSRs' ``approval``, namespaces' ``finalize``.
"""

from __future__ import annotations

import copy
import datetime as dt

from autoscaler.emulator import defaults, schema, validation
from autoscaler.emulator import resources as R
from autoscaler.emulator.admission import suffix
from autoscaler.emulator.auth import rbac, reviews
from autoscaler.emulator.auth.pki import SERVICE_IP
from autoscaler.emulator.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    MethodNotAllowed,
    NotFound,
    not_found,
    status_body,
)
from autoscaler.emulator.events_v1 import from_events_v1
from autoscaler.emulator.patch import APPLY_PATCH, apply_patch
from autoscaler.emulator.reply import Reply
from autoscaler.model.clock import iso

SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
              "selfLink", "generation")  # fmt: skip
ORPHAN_BY_DEFAULT = {("batch", "jobs"), ("", "replicationcontrollers")}
NO_SPEC_GENERATION = {"configmaps", "secrets", "events", "serviceaccounts", "endpoints", "namespaces"}
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
PRIORITY_CLASSES = (
    ("system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
)  # fmt: skip
FIELD_MANAGER_TRUNCATE = 128


class Writes:
    def __init__(self, api) -> None:
        self.api = api
        self.model = api.model
        self._service_ips: set[str] = {SERVICE_IP}
        self._next_ip = 10

    @property
    def store(self):
        return self.model.store

    # --- what kube-apiserver creates at start ------------------------------------------------------------
    def bootstrap(self) -> None:
        """The system namespaces (the apiserver's system namespaces controller), the built-in priority classes,
        the RBAC bootstrap policy, and the ``kubernetes`` Service."""
        with self.model.lock:
            store = self.store
            for name in SYSTEM_NAMESPACES:
                if store.find("namespaces", None, name) is None:
                    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                    defaults.apply("namespaces", ns)
                    ns["status"] = {"phase": "Active"}
                    ns["metadata"]["generation"] = 1
                    store.create("namespaces", ns)
            for name, value, description in PRIORITY_CLASSES:
                if store.find("priorityclasses", None, name) is None:
                    store.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                     "metadata": {"name": name, "generation": 1}, "value": value,
                                                     "description": description,
                                                     "preemptionPolicy": "PreemptLowerPriority"})  # fmt: skip
            for kind, obj in rbac.bootstrap_objects():
                ns = obj["metadata"].get("namespace")
                if store.find(kind, ns, obj["metadata"]["name"]) is None:
                    store.create(kind, obj)
            if store.find("services", "default", "kubernetes") is None:
                store.create("services", {
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "kubernetes", "namespace": "default",
                                 "labels": {"component": "apiserver", "provider": "kubernetes"}},
                    "spec": {"type": "ClusterIP", "clusterIP": SERVICE_IP, "clusterIPs": [SERVICE_IP],
                             "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                             "internalTrafficPolicy": "Cluster",
                             "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
                    "status": {"loadBalancer": {}},
                })  # fmt: skip
            self.model.settle()

    def set_endpoint(self, address: str, port: int) -> None:
        """The ``kubernetes`` Service's Endpoints and EndpointSlice: where the API server listens (the endpoint
        reconciler of kube-apiserver, ``--advertise-address`` and ``--secure-port``)."""
        with self.model.lock:
            svc = self.store.find("services", "default", "kubernetes")
            if svc is not None:
                svc["spec"]["ports"][0]["targetPort"] = port
                self.store.modified("services", svc)
            ep = {"apiVersion": "v1", "kind": "Endpoints",
                  "metadata": {"name": "kubernetes", "namespace": "default",
                               "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                  "subsets": [{"addresses": [{"ip": address}],
                               "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}  # fmt: skip
            slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                      "metadata": {"name": "kubernetes", "namespace": "default",
                                   "labels": {"kubernetes.io/service-name": "kubernetes"}},
                      "addressType": "IPv4",
                      "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
                      "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}  # fmt: skip
            for kind, obj in (("endpoints", ep), ("endpointslices", slice_)):
                current = self.store.find(kind, "default", "kubernetes")
                if current is None:
                    self.store.create(kind, obj)
                else:
                    obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    self.store.replace(kind, obj, check_version=False)

    # --- decoding ----------------------------------------------------------------------------------------
    def _incoming(self, res: R.Resource, payload, query: dict) -> dict:
        if not isinstance(payload, dict):
            raise BadRequest(f"the request body must be a {res.kind} object")
        obj = copy.deepcopy(payload)
        if res.group == "events.k8s.io":
            obj = from_events_v1(obj)
        else:
            sent_version, sent_kind = obj.get("apiVersion"), obj.get("kind")
            if sent_kind and sent_kind != res.kind:
                raise BadRequest(f"the kind in the data ({sent_kind}) does not match the expected kind "
                                 f"({res.kind})")  # fmt: skip
            if sent_version and sent_version != res.api_version:
                raise BadRequest(f"the API version in the data ({sent_version}) does not match the expected API "
                                 f"version ({res.api_version})")  # fmt: skip
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        if not res.custom and res.group != "events.k8s.io":
            found = schema.decode(self.api.minor, res.group, res.version, res.kind, obj)
            if found.type_errors:
                raise BadRequest(f"{res.kind} in version \"{res.version}\" cannot be handled as a {res.kind}: "
                                 f"{found.type_errors[0]}")  # fmt: skip
            mode = (query.get("fieldValidation") or "Warn").capitalize()
            if found.unknown and mode == "Strict":
                raise BadRequest(f".{res.kind} in version \"{res.version}\" cannot be handled as a {res.kind}: strict "
                                 "decoding error: " + ", ".join(f'unknown field "{f}"' for f in found.unknown))  # fmt: skip
            if found.unknown and mode == "Warn":
                for f in found.unknown:
                    self.api.warn(f'unknown field "{f}"')
        return obj

    @staticmethod
    def _dry_run(query: dict) -> bool:
        value = query.get("dryRun")
        if value and value != "All":
            raise BadRequest(f'Invalid dry run value: "{value}"; supported values: All')
        return bool(value)

    # --- create ------------------------------------------------------------------------------------------
    def create(self, res: R.Resource, namespace: str | None, payload, query: dict):
        user = self.api.user()
        if res.plural in reviews.REVIEWS:
            return Reply(
                201, self.api._out(res, reviews.answer(self.api, res.plural, payload, namespace, user))
            )
        if res.plural == "bindings":
            return self._binding(namespace, (payload or {}).get("metadata", {}).get("name", ""), payload)
        if "create" not in res.verbs:
            raise MethodNotAllowed(f"create is not supported on {res.group_resource}")
        obj = self._incoming(res, payload, query)
        out = self.create_object(res, namespace, obj, user, self._dry_run(query))
        return Reply(201, self.api._out(res, out))

    def create_object(
        self, res: R.Resource, namespace: str | None, obj: dict, user, dry_run: bool = False
    ) -> dict:
        """The create pipeline for a decoded object (controllers call it too, as the API server's clients)."""
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                 "request")  # fmt: skip
            meta["namespace"] = namespace or meta.get("namespace") or "default"
            namespace = meta["namespace"]
        else:
            meta.pop("namespace", None)
        for k in SERVER_SET:
            meta.pop(k, None)
        defaults.apply(res.plural, obj)
        self._prepare_create(res, obj, user)
        self.api.admission.mutate("CREATE", res, obj, None, namespace, user)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"][:58] + suffix()
        validation.validate(res.plural, res.kind, obj)
        self.api.admission.validate("CREATE", res, obj, None, namespace, user)
        self._check_unique(res, namespace, meta.get("name", ""))
        meta["generation"] = 1
        if dry_run:
            meta.setdefault("uid", "00000000-0000-0000-0000-000000000000")
            meta["creationTimestamp"] = iso(self.model.now())
            return obj
        return self._store_create(res, obj)

    def _check_unique(self, res: R.Resource, namespace: str | None, name: str) -> None:
        if self.store.find(res.store, namespace, name) is not None:
            err = AlreadyExists(f'{res.group_resource} "{name}" already exists')
            err.details = {"name": name, "kind": res.plural, **({"group": res.group} if res.group else {})}
            raise err

    def _prepare_create(self, res: R.Resource, obj: dict, user) -> None:
        """The strategies' PrepareForCreate: status the server owns, Job selectors, CSR requester, Service IPs."""
        plural = res.plural
        if plural == "pods":
            obj["status"] = {"phase": "Pending", "qosClass": defaults.qos_class(obj.get("spec") or {})}
        elif plural == "namespaces":
            obj["status"] = {"phase": "Active"}
        elif plural == "jobs":
            self._job_selector(obj)
            obj["status"] = {}
        elif plural == "certificatesigningrequests":
            spec = obj.setdefault("spec", {})
            spec["username"], spec["groups"] = user.name, list(user.groups)
            if user.uid:
                spec["uid"] = user.uid
            if user.extra:
                spec["extra"] = {k: list(v) for k, v in user.extra.items()}
            obj["status"] = {}
        elif plural == "services":
            self._allocate_ip(obj)
        elif (
            plural in ("deployments", "replicasets", "statefulsets", "daemonsets", "replicationcontrollers")
            or plural == "customresourcedefinitions"
        ):
            obj["status"] = {}

    def _job_selector(self, job: dict) -> None:
        """jobStrategy.PrepareForCreate/generateSelector: the controller-uid selector and labels (the uid is the one
        the store will give, reserved here)."""
        spec = job.setdefault("spec", {})
        if spec.get("manualSelector"):
            return
        uid = self.store.next_uid()
        job["metadata"]["uid"] = uid
        name = job["metadata"].get("name") or ""
        tpl_meta = spec.setdefault("template", {}).setdefault("metadata", {})
        labels = tpl_meta.setdefault("labels", {})
        labels.update({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                       "controller-uid": uid, "job-name": name})  # fmt: skip
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}

    def _allocate_ip(self, svc: dict) -> None:
        spec = svc.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return
        ip = spec.get("clusterIP")
        if ip == "None":
            spec["clusterIPs"] = ["None"]
        elif ip:
            if ip in self._service_ips:
                raise Invalid(f'Service "{svc["metadata"].get("name")}" is invalid: spec.clusterIPs: Invalid value: '
                              f'[]string{{"{ip}"}}: failed to allocate IP {ip}: provided IP is already allocated')  # fmt: skip
            self._service_ips.add(ip)
            spec["clusterIPs"] = [ip]
        else:
            while (
                f"10.96.{self._next_ip // 256}.{self._next_ip % 256}" in self._service_ips
                or self._next_ip % 256 in (0, 255)
            ):
                self._next_ip += 1
            ip = f"10.96.{self._next_ip // 256}.{self._next_ip % 256}"
            self._service_ips.add(ip)
            spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        svc.setdefault("status", {"loadBalancer": {}})

    def _store_create(self, res: R.Resource, obj: dict) -> dict:
        uid = obj["metadata"].pop("uid", None)
        stored = self.model.create(res.store, obj, uid=uid)
        if res.plural == "customresourcedefinitions":
            self._crd_established(stored)
        return stored

    def _crd_established(self, crd: dict) -> None:
        added = R.register_crd(crd)
        names = (crd.get("spec") or {}).get("names") or {}
        spec = crd.get("spec") or {}
        if spec.get("scope", "Namespaced") != "Namespaced":
            self.store.cluster_scoped.add(f"{names.get('plural', '')}.{spec.get('group', '')}")
        now = iso(self.model.now())
        crd["status"] = {
            "acceptedNames": {k: v for k, v in names.items()},
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": now},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": now},
            ],
            "storedVersions": [v["name"] for v in spec.get("versions") or () if v.get("storage")],
        }  # fmt: skip
        self.store.modified("customresourcedefinitions", crd)
        del added

    # --- update and patch --------------------------------------------------------------------------------
    def _current(self, res: R.Resource, namespace: str | None, name: str) -> dict:
        current = self.store.find(res.store, namespace, name)
        if current is None:
            raise not_found(res.group, res.plural, name)
        return current

    def update(self, res: R.Resource, namespace: str | None, name: str, payload, query: dict):
        obj = self._incoming(res, payload, query)
        meta = obj["metadata"]
        if meta.get("name") not in (None, name):
            raise BadRequest("the name of the object does not match the name on the URL")
        if res.namespaced and meta.get("namespace") not in (None, namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["name"] = name
        current = self.store.find(res.store, namespace, name)
        if current is None:
            if res.plural in ("pods", "nodes") or "create" not in res.verbs:
                raise not_found(res.group, res.plural, name)
            return Reply(201, self.api._out(res, self.create_object(res, namespace, obj, self.api.user(),
                                                                     self._dry_run(query))))  # fmt: skip
        out = self.update_object(res, current, obj, self.api.user(), self._dry_run(query), check_version=True)
        return Reply(200, self.api._out(res, out))

    def patch(
        self, res: R.Resource, namespace: str | None, name: str, payload, content_type: str, query: dict
    ):
        ctype = content_type.split(";")[0].strip()
        current = self.store.find(res.store, namespace, name)
        if current is None:
            if (
                ctype == APPLY_PATCH
                and "create" in res.verbs
                and res.plural not in ("pods", "nodes")
                or (ctype == APPLY_PATCH and res.plural == "pods")
            ):
                obj = self._incoming(res, payload, query)
                obj["metadata"]["name"] = name
                return Reply(201, self.api._out(res, self.create_object(res, namespace, obj, self.api.user(),
                                                                         self._dry_run(query))))  # fmt: skip
            raise not_found(res.group, res.plural, name)
        shown = self.api._out(res, current)
        meta = schema.PatchMeta.of(self.api.minor, res.group, res.version, res.kind)
        patched = apply_patch(shown, payload, ctype, meta)
        if not isinstance(patched, dict):
            raise BadRequest("the patch did not produce an object")
        if (patched.get("metadata") or {}).get("name") not in (None, name):
            raise BadRequest("a patch may not change metadata.name")
        sent_rv = (
            ((payload or {}).get("metadata") or {}).get("resourceVersion")
            if isinstance(payload, dict)
            else None
        )
        obj = self._incoming(res, patched, query)
        obj["metadata"]["name"] = name
        if not sent_rv:
            obj["metadata"].pop("resourceVersion", None)
        out = self.update_object(
            res, current, obj, self.api.user(), self._dry_run(query), check_version=bool(sent_rv)
        )
        return Reply(200, self.api._out(res, out))

    def update_object(self, res: R.Resource, current: dict, obj: dict, user, dry_run: bool = False,
                      check_version: bool = True, sub: str = "") -> dict:  # fmt: skip
        meta, cmeta = obj["metadata"], current["metadata"]
        sent = meta.get("resourceVersion")
        if check_version and sent and sent != cmeta["resourceVersion"]:
            raise Conflict(f'Operation cannot be fulfilled on {res.group_resource} "{cmeta["name"]}": the object has '
                           "been modified; please apply your changes to the latest version and try again")  # fmt: skip
        for k in ("uid", "creationTimestamp", "namespace", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation", "resourceVersion"):  # fmt: skip
            if k in cmeta:
                meta[k] = cmeta[k]
            else:
                meta.pop(k, None)
        if cmeta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or ()) - set(cmeta.get("finalizers") or ())
            if added:
                raise Invalid(f'{res.kind} "{cmeta["name"]}" is invalid: metadata.finalizers: Forbidden: no new '
                              "finalizers can be added if the object is being deleted, found new finalizers "
                              + str(sorted(added)))  # fmt: skip
        if res.has_status and sub != "status":
            if "status" in current:
                obj["status"] = copy.deepcopy(current["status"])
            else:
                obj.pop("status", None)
        if res.plural == "pods":
            obj["status"] = copy.deepcopy(current.get("status") or {})
        defaults.apply(res.plural, obj)
        if res.plural == "namespaces":
            obj["status"] = copy.deepcopy(current.get("status") or {})
            obj["spec"] = copy.deepcopy(current.get("spec") or {})
        if res.plural == "certificatesigningrequests":
            obj["spec"] = copy.deepcopy(current.get("spec") or {})  # CSR specs are immutable
        if res.plural not in NO_SPEC_GENERATION and _spec_of(obj) != _spec_of(current):
            meta["generation"] = int(cmeta.get("generation") or 1) + 1
        validation.validate(res.plural, res.kind, obj, old=current)
        self.api.admission.admit("UPDATE", res, obj, current, cmeta.get("namespace"), user, sub)
        if dry_run:
            return obj
        return self._store_update(res, current, obj)

    def _store_update(self, res: R.Resource, current: dict, obj: dict) -> dict:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._really_delete(res, current)
            return obj
        if res.plural == "pods":
            return self.model.update_pod(current, obj)
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if res.plural == "customresourcedefinitions":
            obj["status"] = current.get("status") or {}
            R.register_crd(obj)
        return self.model.replace(res.store, obj, check_version=False)

    # --- delete ------------------------------------------------------------------------------------------
    def delete(self, res: R.Resource, namespace: str | None, name: str, payload, query: dict):
        opts = payload if isinstance(payload, dict) else {}
        current = self._current(res, namespace, name)
        self._preconditions(res, current, opts.get("preconditions") or {})
        dry_run = self._dry_run(query) or bool(opts.get("dryRun"))
        if res.plural == "namespaces":
            self.api.admission.deletable(name)
        if dry_run:
            return Reply(200, self.api._out(res, current))
        policy = opts.get("propagationPolicy") or query.get("propagationPolicy")
        if opts.get("orphanDependents") is not None and not policy:
            policy = "Orphan" if opts["orphanDependents"] else "Background"
        if not policy:
            policy = "Orphan" if (res.group, res.plural) in ORPHAN_BY_DEFAULT else "Background"
        if policy not in ("Orphan", "Foreground", "Background"):
            raise Invalid(f'DeleteOptions "" is invalid: propagationPolicy: Unsupported value: "{policy}": supported '
                          'values: "Foreground", "Background", "Orphan", "nil"')  # fmt: skip
        grace = opts.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        out, gone = self.delete_object(res, current, policy, None if grace is None else int(grace))
        return Reply(200 if gone else 202, self.api._out(res, out))

    def _preconditions(self, res: R.Resource, current: dict, pre: dict) -> None:
        meta = current["metadata"]
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise Conflict(f'Operation cannot be fulfilled on {res.group_resource} "{meta["name"]}": Precondition '
                           f"failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}")  # fmt: skip
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise Conflict(f'Operation cannot be fulfilled on {res.group_resource} "{meta["name"]}": Precondition '
                           f"failed: ResourceVersion in precondition: {pre['resourceVersion']}, ResourceVersion in "
                           f"object meta: {meta.get('resourceVersion')}")  # fmt: skip

    def delete_object(self, res: R.Resource, current: dict, policy: str = "Background",
                      grace: int | None = None) -> tuple[dict, bool]:  # fmt: skip
        """(the object as it is now, whether it is gone)."""
        meta = current["metadata"]
        if res.plural == "namespaces":
            return self._delete_namespace(current), False
        if res.plural == "pods":
            gone = self.model.delete_pod_gracefully(meta["namespace"], meta["name"], grace)
            return current, gone
        if res.plural == "nodes":
            self.model.delete("nodes", None, meta["name"])
            return current, True
        finalizers = list(meta.get("finalizers") or ())
        wanted = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(policy)
        if meta.get("deletionTimestamp"):
            return current, False  # already being deleted: wait for the finalizers
        if wanted and wanted not in finalizers and (wanted == "orphan" or self._has_dependents(current)):
            finalizers.append(wanted)
        if finalizers:
            meta["finalizers"] = finalizers
            meta["deletionTimestamp"] = iso(self.model.now())
            meta["deletionGracePeriodSeconds"] = 0
            self.store.modified(res.store, current)
            return current, False
        self._really_delete(res, current)
        return current, True

    def _has_dependents(self, owner: dict) -> bool:
        return self.model.gc.has_dependents(owner)

    def _really_delete(self, res: R.Resource, current: dict) -> None:
        meta = current["metadata"]
        if res.plural == "customresourcedefinitions":
            R.unregister_crd(current)
        if res.plural == "services":
            for ip in (current.get("spec") or {}).get("clusterIPs") or ():
                self._service_ips.discard(ip)
        if self.store.find(res.store, meta.get("namespace"), meta["name"]) is current:
            self.model.delete(res.store, meta.get("namespace"), meta["name"])

    def _delete_namespace(self, ns: dict) -> dict:
        meta = ns["metadata"]
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = iso(self.model.now())
            meta["deletionGracePeriodSeconds"] = 0
            ns.setdefault("status", {})["phase"] = "Terminating"
            self.store.modified("namespaces", ns)
        return ns

    def delete_collection(self, res: R.Resource, namespace: str | None, payload, query: dict):
        from autoscaler.emulator.selectors import parse_field_selector, parse_label_selector

        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), res.store)
        policy = (payload or {}).get("propagationPolicy") if isinstance(payload, dict) else None
        items = []
        for obj in list(self.api._objects(res, namespace)):
            if labels(obj["metadata"].get("labels")) and fields(obj):
                out, _ = self.delete_object(res, obj, policy or "Background")
                items.append(self.api._out(res, out))
        return Reply(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version,
                           "metadata": {"resourceVersion": str(self.store.resource_version)}, "items": items})  # fmt: skip

    # --- subresources ------------------------------------------------------------------------------------
    def subresource(
        self, verb: str, res: R.Resource, namespace, name, sub: str, payload, query, content_type
    ):
        if sub not in res.subresources:
            raise NotFound("the server could not find the requested resource")
        if res.plural == "pods" and sub == "eviction" and verb == "create":
            return self._evict(namespace, name, payload)
        if res.plural == "pods" and sub == "binding" and verb == "create":
            return self._binding(namespace, name, payload)
        if res.plural == "serviceaccounts" and sub == "token" and verb == "create":
            return self._token(namespace, name, payload)
        if sub == "scale":
            return self._scale(verb, res, namespace, name, payload, content_type, query)
        if sub in ("status", "approval", "finalize") and verb == "get":
            return Reply(200, self.api._get(res, namespace, name))
        if sub in ("status", "approval", "finalize") and verb in ("update", "patch"):
            return self._write_sub(verb, res, namespace, name, sub, payload, content_type, query)
        raise MethodNotAllowed(f"{verb} is not supported on {res.plural}/{sub}")

    def _write_sub(self, verb, res, namespace, name, sub, payload, content_type, query):
        current = self._current(res, namespace, name)
        shown = self.api._out(res, current)
        if verb == "update":
            incoming = self._incoming(res, payload, query)
        else:
            meta = schema.PatchMeta.of(self.api.minor, res.group, res.version, res.kind)
            incoming = apply_patch(shown, payload, content_type.split(";")[0].strip(), meta)
        sent_rv = (
            (incoming.get("metadata") or {}).get("resourceVersion")
            if verb == "update"
            or (isinstance(payload, dict) and (payload.get("metadata") or {}).get("resourceVersion"))
            else None
        )
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            raise Conflict(f'Operation cannot be fulfilled on {res.group_resource} "{name}": the object has been '
                           "modified; please apply your changes to the latest version and try again")  # fmt: skip
        updated = copy.deepcopy(shown)
        if sub == "finalize":
            updated["spec"] = {"finalizers": list(((incoming.get("spec") or {}).get("finalizers")) or [])}
            if res.plural == "namespaces":
                if not updated["spec"]["finalizers"] and current["metadata"].get("deletionTimestamp"):
                    current["spec"] = updated["spec"]
                    self.model.namespaces.maybe_remove(current)
                    return Reply(200, self.api._out(res, current))
                current["spec"] = updated["spec"]
                self.store.modified("namespaces", current)
                return Reply(200, self.api._out(res, current))
        elif sub == "approval":
            conditions = (incoming.get("status") or {}).get("conditions") or []
            updated.setdefault("status", {})["conditions"] = self._stamp_conditions(conditions, shown)
        else:
            updated["status"] = incoming.get("status") or {}
        if res.plural == "pods":
            self.api.admission.admit("UPDATE", res, updated, current, namespace, self.api.user(), sub)
            return Reply(200, self.api._out(res, self.model.update_pod_status(current, updated["status"])))
        if res.plural == "nodes":
            self.api.admission.admit("UPDATE", res, updated, current, None, self.api.user(), sub)
            updated["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return Reply(200, self.api._out(res, self.model.replace(res.store, updated, check_version=False)))
        self.api.admission.admit("UPDATE", res, updated, current, namespace, self.api.user(), sub)
        if res.plural == "certificatesigningrequests":
            types = {c.get("type") for c in (updated.get("status") or {}).get("conditions") or ()
                     if c.get("status", "True") == "True"}  # fmt: skip
            if {"Approved", "Denied"} <= types:
                raise Invalid(f'CertificateSigningRequest.certificates.k8s.io "{name}" is invalid: status.conditions: '
                              "Invalid value: Approved and Denied conditions are mutually exclusive")  # fmt: skip
        updated["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return Reply(200, self.api._out(res, self.model.replace(res.store, updated, check_version=False)))

    def _stamp_conditions(self, conditions: list[dict], shown: dict) -> list[dict]:
        now = iso(self.model.now())
        old = {c.get("type"): c for c in (shown.get("status") or {}).get("conditions") or ()}
        out = []
        for c in conditions:
            c = {**c, "status": c.get("status", "True")}
            prev = old.get(c.get("type"))
            c.setdefault("lastUpdateTime", now)
            if prev is None or prev.get("status") != c["status"]:
                c["lastTransitionTime"] = now
            else:
                c.setdefault("lastTransitionTime", prev.get("lastTransitionTime", now))
            out.append(c)
        return out

    def _evict(self, namespace: str, name: str, payload):
        self._current(R.BY_PATH[("", "v1", "pods")], namespace, name)
        if self.model.evict_pod(namespace, name):
            return Reply(201, status_body(201, "", "", None) | {"status": "Success"})
        message = "Cannot evict pod as it would violate the pod's disruption budget."
        return Reply(429, status_body(429, "TooManyRequests", message,
                                      {"causes": [{"reason": "DisruptionBudget", "message": message}]}))  # fmt: skip

    def _binding(self, namespace: str, name: str, payload):
        target = ((payload or {}).get("target") or {}).get("name")
        if not target:
            raise Invalid(f'Binding "{name}" is invalid: target.name: Required value')
        self.model.bind_pod(namespace, name, target)
        return Reply(201, status_body(201, "", "", None) | {"status": "Success"})

    def _token(self, namespace: str, name: str, payload):
        sa = self.store.find("serviceaccounts", namespace, name)
        if sa is None:
            raise not_found("", "serviceaccounts", name)
        spec = (payload or {}).get("spec") or {}
        seconds = spec.get("expirationSeconds")
        if seconds is not None and seconds < 600:
            raise Invalid('TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: '
                          f"{seconds}: may not specify a duration less than 10 minutes")  # fmt: skip
        ref = spec.get("boundObjectRef")
        bound = node = None
        if ref:
            kind = ref.get("kind")
            store_kind = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}.get(kind)
            if store_kind is None:
                raise Invalid(f'TokenRequest.authentication.k8s.io "" is invalid: spec.boundObjectRef.kind: '
                              f'Unsupported value: "{kind}": supported values: "Pod", "Secret", "Node"')  # fmt: skip
            bound = self.store.find(store_kind, None if kind == "Node" else namespace, ref.get("name", ""))
            if bound is None or (ref.get("uid") and bound["metadata"].get("uid") != ref["uid"]):
                raise not_found("", store_kind, ref.get("name", ""))
            if kind == "Pod" and (bound.get("spec") or {}).get("serviceAccountName") != name:
                raise BadRequest(f"cannot bind token for serviceaccount {name!r} to pod running with serviceaccount "
                                 f"{(bound.get('spec') or {}).get('serviceAccountName')!r}")  # fmt: skip
            if kind == "Pod" and (bound.get("spec") or {}).get("nodeName"):
                node = self.store.find("nodes", None, bound["spec"]["nodeName"])
        token, expiry = self.api.tokens.request(sa, spec.get("audiences"), seconds, bound, node)
        stamp = dt.datetime.fromtimestamp(expiry, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return Reply(201, {
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": {"audiences": list(spec.get("audiences") or self.api.tokens.audiences),
                     "expirationSeconds": int(expiry - int(dt.datetime.now(dt.UTC).timestamp())),
                     **({"boundObjectRef": ref} if ref else {})},
            "status": {"token": token, "expirationTimestamp": stamp},
        })  # fmt: skip

    def _scale(self, verb, res, namespace, name, payload, content_type, query):
        current = self._current(res, namespace, name)
        if verb in ("update", "patch"):
            shown = self._scale_object(res, current)
            if verb == "update":
                incoming = payload if isinstance(payload, dict) else {}
            else:
                incoming = apply_patch(shown, payload, content_type.split(";")[0].strip())
            replicas = (incoming.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise Invalid(f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas}: '
                              "must be greater than or equal to 0")  # fmt: skip
            sent_rv = (incoming.get("metadata") or {}).get("resourceVersion") if verb == "update" else None
            obj = copy.deepcopy(self.api._out(res, current))
            obj["spec"]["replicas"] = replicas
            if not sent_rv:
                obj["metadata"].pop("resourceVersion", None)
            else:
                obj["metadata"]["resourceVersion"] = sent_rv
            self.update_object(
                res, current, obj, self.api.user(), self._dry_run(query), check_version=bool(sent_rv)
            )
            current = self._current(res, namespace, name)
        return Reply(200, self._scale_object(res, current))

    def _scale_object(self, res, obj: dict) -> dict:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        selector = spec.get("selector") or {}
        if res.plural != "replicationcontrollers":
            selector = selector.get("matchLabels") or {}
        meta = obj["metadata"]
        return {
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
            "spec": {"replicas": spec.get("replicas", 0)},
            "status": {"replicas": status.get("replicas", 0),
                       "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))},
        }  # fmt: skip


def _spec_of(obj: dict):
    """What a change of bumps ``generation``: the spec, or for spec-less kinds everything but metadata and status."""
    if "spec" in obj:
        return obj.get("spec")
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}
