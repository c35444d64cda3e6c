"""What the kubelet resolves before it starts a container, from the pod and the API (kuberuntime
``generateContainerConfig``), for a container that runs as a process of this host:

| kubelet (pkg/kubelet) | here |
|---|---|
| image ENTRYPOINT/CMD, overridden by ``command``/``args``, ``$(VAR)`` expanded (``ExpandContainerCommandAndArgs``) | images.py holds each image's config as its Dockerfile sets it |
| env: the image's, then service links (``getServiceEnvVarMap``, ``enableServiceLinks`` default true), then ``envFrom`` and ``env`` with ``valueFrom`` (``fieldRef``, ``resourceFieldRef``, ``configMapKeyRef``, ``secretKeyRef``) | same order, read from the API; ``KUBERNETES_SERVICE_HOST/PORT`` name the API server's loopback address, since no cluster IP routes here |
| ``workingDir``, ``runAsUser``/``runAsGroup`` (container over pod, else the image's USER) | ``cwd``; the uid/gid apply when the kubelet runs as root |
| one directory per volume under ``/var/lib/kubelet/pods/<uid>/volumes`` (emptyDir, configMap, secret, projected with a TokenRequest token bound to the pod, downwardAPI, hostPath, PVC) | ``<root>/<namespace>_<name>_<uid>/volumes/<volume>`` (a claim's folder is shared: ``<root>/claims/<namespace>_<claim>``); a ``mountPath`` at the start of a command word, env value or ``workingDir`` is rewritten to that folder (a process shares this host's file system) |
"""

from __future__ import annotations

import base64
import os
import shutil
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from localcluster.kubelet.api import Api
from localcluster.kubelet.expansion import dns_names, expand, field, remap, resolve, write, write_items
from localcluster.kubelet.images import VENV_BIN, image_config


@dataclass
class Spec:
    """One container as a process: what runs, with what, where, as whom."""

    name: str
    argv: list[str]
    env: dict
    cwd: str
    user: tuple[int, int] | None


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


class Resolver:
    """Reads what a pod's containers refer to (ConfigMaps, Secrets, Services, ServiceAccount tokens) from the API."""

    def __init__(self, api: Api, root: Path) -> None:
        self.api = api
        self.root = root

    def _object(self, ns: str, kind: str, name: str, optional: bool | None = False) -> dict:
        """The ConfigMap or Secret; ValueError as the kubelet words it when it is missing and not optional."""
        obj = self.api.get(f"/api/v1/namespaces/{_q(ns)}/{kind}/{_q(name)}")
        if obj is None and not optional:
            raise ValueError(f'{kind[:-1]} "{name}" not found')
        return obj or {}

    def services(self, ns: str) -> list[dict]:
        return (self.api.get(f"/api/v1/namespaces/{_q(ns)}/services") or {}).get("items") or []

    def service_env(self, pod: dict, services: list[dict]) -> dict:
        """Docker-links style variables for the namespace's services and ``kubernetes`` (pkg/kubelet/envvars:
        ``FromServices``)."""
        host, port = self.api.host, self.api.port
        env = {
            "KUBERNETES_SERVICE_HOST": str(host),
            "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
            "KUBERNETES_PORT": f"tcp://{host}:{port}",
            f"KUBERNETES_PORT_{port}_TCP": f"tcp://{host}:{port}",
        }
        for svc in services:
            ip = svc["spec"].get("clusterIP")
            name = svc["metadata"]["name"]
            ports = svc["spec"].get("ports") or ()
            if not ip or ip == "None" or name == "kubernetes" or not ports:
                continue
            prefix = name.upper().replace("-", "_")
            env[f"{prefix}_SERVICE_HOST"] = ip
            env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
            for p in ports:
                if p.get("name"):
                    env[f"{prefix}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
                proto = p.get("protocol", "TCP")
                env[f"{prefix}_PORT_{p['port']}_{proto}"] = f"{proto.lower()}://{ip}:{p['port']}"
            env[f"{prefix}_PORT"] = f"{ports[0].get('protocol', 'TCP').lower()}://{ip}:{ports[0]['port']}"
        return env

    def _source(self, ns: str, src: dict) -> dict:
        if "configMapRef" in src:
            ref = src["configMapRef"]
            return dict(self._object(ns, "configmaps", ref["name"], ref.get("optional")).get("data") or {})
        if "secretRef" in src:
            ref = src["secretRef"]
            data = self._object(ns, "secrets", ref["name"], ref.get("optional")).get("data") or {}
            return {k: base64.b64decode(v).decode() for k, v in data.items()}
        return {}

    def _value_from(self, pod: dict, c: dict, ref: dict) -> str:
        ns = pod["metadata"]["namespace"]
        if "fieldRef" in ref:
            return field(pod, ref["fieldRef"]["fieldPath"])
        if "resourceFieldRef" in ref:
            kind, _, res = ref["resourceFieldRef"]["resource"].partition(".")
            return str(((c.get("resources") or {}).get(kind) or {}).get(res, ""))
        if "configMapKeyRef" in ref:
            obj = self._object(
                ns, "configmaps", ref["configMapKeyRef"]["name"], ref["configMapKeyRef"].get("optional")
            )
            return str((obj.get("data") or {}).get(ref["configMapKeyRef"]["key"], ""))
        if "secretKeyRef" in ref:
            obj = self._object(
                ns, "secrets", ref["secretKeyRef"]["name"], ref["secretKeyRef"].get("optional")
            )
            raw = (obj.get("data") or {}).get(ref["secretKeyRef"]["key"], "")
            return base64.b64decode(raw).decode() if raw else ""
        return ""

    def volumes(self, pod: dict, folder: Path) -> dict[str, str]:
        """One folder per volume, filled as the kubelet's volume plugins fill theirs: {volume name: folder}."""
        out: dict[str, str] = {}
        ns = pod["metadata"]["namespace"]
        sc = pod["spec"].get("securityContext") or {}
        owner = (
            (int(sc["runAsUser"]), int(sc.get("runAsGroup", sc["runAsUser"]))) if "runAsUser" in sc else None
        )
        for v in pod["spec"].get("volumes") or ():
            d = folder / "volumes" / v["name"]
            if "persistentVolumeClaim" in v:  # a claim's volume is shared by every pod that mounts it
                d = self.root / "claims" / f"{ns}_{v['persistentVolumeClaim']['claimName']}"
                if not d.exists() and owner is not None and os.geteuid() == 0:
                    # a researcher's claims are EFS access points whose root directory is created for the
                    # namespace's uid (terraform/modules/efs: root_directory.creation_info): the first pod's
                    d.mkdir(parents=True)
                    os.chown(d, *owner)
            d.mkdir(parents=True, exist_ok=True)
            out[v["name"]] = str(d)
            if "projected" in v:
                for src in v["projected"].get("sources") or ():
                    if "serviceAccountToken" in src:
                        write(
                            d / src["serviceAccountToken"]["path"],
                            self._token(pod, src["serviceAccountToken"]),
                        )
                    else:
                        self._fill(d, pod, ns, src)
            else:
                self._fill(d, pod, ns, v)
        return out

    def _token(self, pod: dict, t: dict) -> bytes:
        """A TokenRequest for the pod's ServiceAccount bound to the pod, as the kubelet's token manager asks."""
        meta = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"
        body = {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [t["audience"]] if t.get("audience") else None,
                     "expirationSeconds": int(t.get("expirationSeconds", 3607)),
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}},
        }  # fmt: skip
        reply = self.api.request("POST", f"/api/v1/namespaces/{_q(meta['namespace'])}/serviceaccounts/{_q(sa)}/token",
                                 body)  # fmt: skip
        return (reply or {}).get("status", {}).get("token", "").encode()

    def _fill(self, d: Path, pod: dict, ns: str, src: dict) -> None:
        """The files of a configMap, secret or downwardAPI source: a volume's own, or one of a projected volume's
        sources (whose secret is ``name``, where a secret volume's is ``secretName``)."""
        if "configMap" in src:
            obj = self._object(ns, "configmaps", src["configMap"]["name"], src["configMap"].get("optional"))
            write_items(d, obj.get("data") or {}, src["configMap"].get("items"), binary=False)
        elif "secret" in src:
            name = src["secret"].get("secretName") or src["secret"].get("name")
            obj = self._object(ns, "secrets", name, src["secret"].get("optional"))
            write_items(d, obj.get("data") or {}, src["secret"].get("items"), binary=True)
        elif "downwardAPI" in src:
            for item in src["downwardAPI"].get("items") or ():
                if "fieldRef" in item:
                    write(d / item["path"], field(pod, item["fieldRef"]["fieldPath"]).encode())

    def container(self, pod: dict, c: dict, folder: Path, mounts: dict, services: list[dict]) -> Spec:
        cfg = image_config(c["image"])
        assert cfg is not None
        env = {
            "PATH": f"{cfg.venv_bin or VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        }
        env.update(cfg.env)
        env["HOSTNAME"] = pod["metadata"]["name"]
        links = self.service_env(pod, services)
        if pod["spec"].get("enableServiceLinks", True) is False:
            links = {k: v for k, v in links.items() if k.startswith("KUBERNETES_")}
        env.update(links)
        ns = pod["metadata"]["namespace"]
        for src in c.get("envFrom") or ():
            env.update({f"{src.get('prefix', '')}{k}": v for k, v in self._source(ns, src).items()})
        for e in c.get("env") or ():
            if "valueFrom" in e:
                env[e["name"]] = self._value_from(pod, c, e["valueFrom"])
            else:
                env[e["name"]] = expand(str(e.get("value", "")), env)
        own = {
            m["mountPath"]: mounts[m["name"]] for m in c.get("volumeMounts") or () if m.get("name") in mounts
        }
        spec_env = {e["name"] for e in c.get("env") or ()}  # only what the pod spec writes is remapped
        names = dns_names(ns, [s["metadata"]["name"] for s in services])
        env = {k: (resolve(remap(v, own), names) if k in spec_env else v) for k, v in env.items()}
        words = [*(c.get("command") or cfg.entrypoint)]
        words += list(c.get("args") or (() if c.get("command") else cfg.cmd))
        argv = [resolve(remap(expand(w, env), own), names) for w in words]
        if argv and "/" not in argv[0]:
            argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
        cwd = remap(c.get("workingDir") or "", own) or str(folder / "containers" / c["name"])
        Path(cwd).mkdir(parents=True, exist_ok=True)
        sc_pod = pod["spec"].get("securityContext") or {}
        sc = c.get("securityContext") or {}
        uid = sc.get("runAsUser", sc_pod.get("runAsUser"))
        gid = sc.get("runAsGroup", sc_pod.get("runAsGroup"))
        user = cfg.user
        if uid is not None:
            user = (int(uid), int(gid if gid is not None else (user[1] if user else uid)))
        return Spec(c["name"], argv, env, cwd, user)
