"""The emulator's container runtime for images this repository builds: each container runs as a local process (what
an image runs and the pure rewrites of a container's words live in localcluster/kubelet/, the
real local stack's process kubelet; this runner goes when the emulator goes).

Opt-in (``Emulator(run_pods=DIR)``, ``python -m autoscaler.emulator --run-pods DIR``). When a pod bound to a node
has pulled its images (model/images.py), ``ClusterModel._run_containers`` hands it here; a pod whose containers all
use an image of :data:`IMAGES` runs them as processes and its phase follows their exit (the model's duration and
exit-code annotations are not used for it); any other pod stays simulated. What the kubelet does, and how here:

| kubelet (pkg/kubelet) | here |
|---|---|
| image ENTRYPOINT/CMD, overridden by ``command``/``args`` (kuberuntime: ``kubecontainer.ExpandContainerCommandAndArgs``, ``$(VAR)`` expanded) | :data:`IMAGES` holds each image's config as its Dockerfile sets it |
| env: the image's, then service links (``kubelet_pods.go: getServiceEnvVarMap``, ``enableServiceLinks`` default true), then ``envFrom`` and ``env`` with ``valueFrom`` (downward API ``fieldRef``, ``resourceFieldRef``, ``configMapKeyRef``, ``secretKeyRef``) | same order; ``KUBERNETES_SERVICE_HOST/PORT`` name the emulator's secure port, since no cluster IP routes here |
| ``workingDir``, ``runAsUser``/``runAsGroup`` (container over pod, else the image's USER) | ``cwd``; the uid/gid are applied when the emulator runs as root (the standard image's venv is :data:`STANDARD_VENV`, which every uid can run; ``DIR`` must be reachable by every uid), otherwise recorded in the pod's folder (``user``) |
| one directory per volume under ``/var/lib/kubelet/pods/<uid>/volumes`` (emptyDir, configMap, secret, projected with the bound ServiceAccount token, downwardAPI, hostPath, PVC) | ``DIR/<namespace>_<name>_<uid>/volumes/<volume>``; a ``mountPath`` at the start of a command word, env value or ``workingDir`` is rewritten to that folder (a process shares this host's file system) |
| stdout/stderr to the container log (``pods/{name}/log``) | logs.py |
| restartPolicy: Always restarts, OnFailure restarts a non-zero exit, Never ends the pod Succeeded/Failed with the exit code | same; ``restartCount`` counted; the restart back-off of ``kuberuntime`` (CrashLoopBackOff: 10 s doubling to 5 min, reset after 10 min of running; :data:`BACKOFF_INITIAL_S`), the container waiting with ``CrashLoopBackOff`` and its last exit in ``lastState`` |
| DELETE: SIGTERM, ``terminationGracePeriodSeconds``, SIGKILL (kuberuntime_container.go: ``killContainer``) | same |
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from localcluster.kubelet.expansion import dns_names, expand
from localcluster.kubelet.expansion import field as _field
from localcluster.kubelet.expansion import remap as _remap
from localcluster.kubelet.expansion import resolve as _resolve
from localcluster.kubelet.expansion import write as _write
from localcluster.kubelet.expansion import write_items as _write_items
from localcluster.kubelet.images import VENV_BIN as _VENV_BIN
from localcluster.kubelet.images import closed_folder, image_config

# the kubelet's container restart back-off (pkg/kubelet/kubelet.go: backOffPeriod 10 s, MaxContainerBackOff 300 s;
# an entry is forgotten after it has not failed for 2 x the maximum): a container that crashes at once restarts
# after 10, 20, 40 ... 300 s, so a crash loop costs a start every 5 minutes, not every second
BACKOFF_INITIAL_S = 10.0
BACKOFF_MAX_S = 300.0
BACKOFF_RESET_S = 2 * BACKOFF_MAX_S


def backoff_s(restarts: int, ran_s: float) -> float:
    """The wait before the next start of a container that has restarted ``restarts`` times and ran ``ran_s``."""
    if ran_s >= BACKOFF_RESET_S:
        return BACKOFF_INITIAL_S
    return min(BACKOFF_INITIAL_S * 2 ** min(restarts, 16), BACKOFF_MAX_S)


@dataclass
class _Container:
    name: str
    argv: list[str]
    env: dict
    cwd: str
    user: tuple[int, int] | None
    restart: str
    proc: subprocess.Popen | None = None
    restarts: int = 0
    restart_at: float | None = None
    exit_code: int | None = None
    started_at: float = 0.0  # time.monotonic() of its last start


@dataclass
class _Pod:
    pod: dict
    folder: Path
    containers: list[_Container]
    stopping_until: float | None = None
    done: bool = False
    inits: list[_Container] = field(
        default_factory=list
    )  # run one by one, each to success, before containers
    started: bool = False  # the containers (after every init container)


class ProcessRuntime:
    def __init__(self, api, root: str | Path, endpoint: tuple[str, int] = ("127.0.0.1", 443)) -> None:
        self.api = api
        self.endpoint = endpoint  # the API server's secure address, for KUBERNETES_SERVICE_HOST/PORT
        self.model = api.model
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0 and (closed := closed_folder(self.root)) is not None:
            raise PermissionError(
                f"--run-pods {root}: {closed} is closed to other users (mode {closed.stat().st_mode & 0o777:04o}), so "
                "pods that run as their own uid could not reach their folders; choose a folder every user can enter"
            )
        self._pods: dict[str, _Pod] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="kubelet-runtime")
        self._thread.start()

    # --- the model's hooks (called under the model's lock) ------------------------------------------------
    def start_pod(self, pod: dict) -> bool:
        containers = pod["spec"].get("containers") or ()
        inits = pod["spec"].get("initContainers") or ()
        if not containers or any(image_config(c.get("image", "")) is None for c in [*inits, *containers]):
            return False
        meta = pod["metadata"]
        folder = self.root / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
        mounts = self._volumes(pod, folder / "volumes")
        services = self._service_env(pod)
        run = _Pod(pod, folder, [])
        for c in containers:
            run.containers.append(self._container(pod, c, folder, mounts, services))
        for c in inits:
            run.inits.append(self._container(pod, c, folder, mounts, services))
            run.inits[-1].restart = "Never" if pod["spec"].get("restartPolicy") == "Never" else "OnFailure"
        self._pods[meta["uid"]] = run
        if run.inits:  # kuberuntime SyncPod: init containers in order, each to success, then the containers
            self._initializing(run)
            self._spawn(run, run.inits[0])
        else:
            self._start_containers(run)
        return True

    def _start_containers(self, run: _Pod) -> None:
        run.started = True
        for c in run.containers:
            self._spawn(run, c)

    def _initializing(self, run: _Pod) -> None:
        """The pod's status while its init containers run: Pending, Initialized False, PodInitializing."""
        pod, t = run.pod, _now_iso()
        status = pod["status"]
        status["phase"] = "Pending"
        for cond in status.get("conditions") or ():
            if cond["type"] in ("Initialized", "ContainersReady", "Ready"):
                cond.update(status="False", reason="PodInitializing" if cond["type"] == "Initialized" else
                            "ContainersNotInitialized", lastTransitionTime=t)  # fmt: skip
        status["initContainerStatuses"] = [
            {"name": c.name, "image": next(x["image"] for x in pod["spec"]["initContainers"] if x["name"] == c.name),
             "imageID": "", "ready": False, "restartCount": 0,
             "state": ({"terminated": {"exitCode": c.exit_code, "reason": "Completed" if c.exit_code == 0 else "Error",
                                       "finishedAt": t}} if c.exit_code is not None
                       else {"running": {"startedAt": t}} if c.proc is not None else {"waiting": {"reason": "PodInitializing"}})}
            for c in run.inits
        ]  # fmt: skip
        for cs in status.get("containerStatuses") or ():
            cs.update(ready=False, started=False, state={"waiting": {"reason": "PodInitializing"}})
        self.model.store.modified("pods", pod)

    def _initialized(self, run: _Pod) -> None:
        from autoscaler.model import objects as O

        pod = run.pod
        node = self.model.store.find("nodes", None, pod["spec"].get("nodeName", ""))
        inits = pod["status"].get("initContainerStatuses")
        started = pod["status"].get("startTime")
        pod["status"] = O.running_status(pod, node, _now_iso())
        pod["status"]["startTime"] = started or pod["status"]["startTime"]
        if inits:
            for s in inits:
                s["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": _now_iso()}}
            pod["status"]["initContainerStatuses"] = inits
        self.model.store.modified("pods", pod)

    def stop_pod(self, pod: dict, grace: int | None) -> bool:
        run = self._pods.get(pod["metadata"]["uid"])
        if run is None or run.done:
            return False
        if grace is None:
            grace = int(pod["spec"].get("terminationGracePeriodSeconds", 30))
        if run.stopping_until is None:
            run.stopping_until = time.monotonic() + grace
            pod["metadata"]["deletionTimestamp"] = pod["metadata"].get("deletionTimestamp") or _now_iso()
            pod["metadata"]["deletionGracePeriodSeconds"] = grace
            self.model.store.modified("pods", pod)
            for c in run.containers:
                if c.proc is not None and c.proc.poll() is None:
                    c.proc.send_signal(signal.SIGTERM)
        return True

    def close(self) -> None:
        self._stop.set()
        for run in list(self._pods.values()):
            for c in run.containers:
                if c.proc is not None and c.proc.poll() is None:
                    c.proc.kill()
                    c.proc.wait(timeout=5)
        self._thread.join(timeout=5)

    # --- building a container ----------------------------------------------------------------------------
    def _container(self, pod: dict, c: dict, folder: Path, mounts: dict, services: dict) -> _Container:
        cfg = image_config(c["image"])
        assert cfg is not None
        env = {
            "PATH": f"{cfg.venv_bin or _VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        }
        env.update(cfg.env)
        env["HOSTNAME"] = pod["metadata"]["name"]
        if pod["spec"].get("enableServiceLinks", True) is not False:
            env.update(services)
        else:
            env.update({k: v for k, v in services.items() if k.startswith("KUBERNETES_")})
        ns = pod["metadata"]["namespace"]
        for src in c.get("envFrom") or ():
            data = self._source(ns, src)
            env.update({f"{src.get('prefix', '')}{k}": v for k, v in data.items()})
        for e in c.get("env") or ():
            if "valueFrom" in e:
                env[e["name"]] = self._value_from(pod, c, e["valueFrom"])
            else:
                env[e["name"]] = expand(str(e.get("value", "")), env)
        own = {
            m["mountPath"]: mounts[m["name"]] for m in c.get("volumeMounts") or () if m.get("name") in mounts
        }
        spec_env = {e["name"] for e in c.get("env") or ()}  # only what the pod spec writes is remapped
        names = self._dns_names(ns)
        env = {k: (_resolve(_remap(v, own), names) if k in spec_env else v) for k, v in env.items()}
        words = [*(c.get("command") or cfg.entrypoint)]
        words += list(c.get("args") or (() if c.get("command") else cfg.cmd))
        argv = [_resolve(_remap(expand(w, env), own), names) for w in words]
        if argv and "/" not in argv[0]:
            argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
        cwd = _remap(c.get("workingDir") or "", own)
        if not cwd:
            cwd = str(folder / "containers" / c["name"])
        Path(cwd).mkdir(parents=True, exist_ok=True)
        sc_pod = pod["spec"].get("securityContext") or {}
        sc = c.get("securityContext") or {}
        uid = sc.get("runAsUser", sc_pod.get("runAsUser"))
        gid = sc.get("runAsGroup", sc_pod.get("runAsGroup"))
        user = cfg.user
        if uid is not None:
            user = (int(uid), int(gid if gid is not None else (user[1] if user else uid)))
        restart = pod["spec"].get("restartPolicy", "Always")
        return _Container(c["name"], argv, env, cwd, user, restart)

    def _dns_names(self, ns: str) -> re.Pattern | None:
        return dns_names(ns, [s["metadata"]["name"] for s in self.model.store.list("services", ns)])

    def _source(self, ns: str, src: dict) -> dict:
        if "configMapRef" in src:
            obj = self.model.store.find("configmaps", ns, src["configMapRef"]["name"]) or {}
            return dict(obj.get("data") or {})
        if "secretRef" in src:
            obj = self.model.store.find("secrets", ns, src["secretRef"]["name"]) or {}
            return {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return {}

    def _value_from(self, pod: dict, c: dict, ref: dict) -> str:
        ns = pod["metadata"]["namespace"]
        if "fieldRef" in ref:
            return _field(pod, ref["fieldRef"]["fieldPath"])
        if "resourceFieldRef" in ref:
            r = ref["resourceFieldRef"]
            kind, _, res = r["resource"].partition(".")
            value = ((c.get("resources") or {}).get(kind) or {}).get(res, "")
            return str(value)
        if "configMapKeyRef" in ref:
            obj = self.model.store.find("configmaps", ns, ref["configMapKeyRef"]["name"]) or {}
            return str((obj.get("data") or {}).get(ref["configMapKeyRef"]["key"], ""))
        if "secretKeyRef" in ref:
            obj = self.model.store.find("secrets", ns, ref["secretKeyRef"]["name"]) or {}
            raw = (obj.get("data") or {}).get(ref["secretKeyRef"]["key"], "")
            return base64.b64decode(raw).decode() if raw else ""
        return ""

    def _service_env(self, pod: dict) -> dict:
        """Docker-links style variables for the namespace's services and ``kubernetes`` (kubelet_pods.go:
        ``getServiceEnvVarMap``, pkg/kubelet/envvars: ``FromServices``)."""
        host, port = self.endpoint
        env = {
            "KUBERNETES_SERVICE_HOST": str(host),
            "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
            "KUBERNETES_PORT": f"tcp://{host}:{port}",
            f"KUBERNETES_PORT_{port}_TCP": f"tcp://{host}:{port}",
        }
        for svc in self.model.store.list("services", pod["metadata"]["namespace"]):
            ip = svc["spec"].get("clusterIP")
            name = svc["metadata"]["name"]
            if not ip or ip == "None" or name == "kubernetes":
                continue
            prefix = name.upper().replace("-", "_")
            ports = svc["spec"].get("ports") or ()
            if not ports:
                continue
            env[f"{prefix}_SERVICE_HOST"] = ip
            env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
            for p in ports:
                if p.get("name"):
                    env[f"{prefix}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
                proto = p.get("protocol", "TCP")
                env[f"{prefix}_PORT_{p['port']}_{proto}"] = f"{proto.lower()}://{ip}:{p['port']}"
            env[f"{prefix}_PORT"] = f"{ports[0].get('protocol', 'TCP').lower()}://{ip}:{ports[0]['port']}"
        return env

    def _volumes(self, pod: dict, root: Path) -> dict[str, str]:
        """One folder per volume, filled as the kubelet's volume plugins fill theirs."""
        out: dict[str, str] = {}
        ns = pod["metadata"]["namespace"]
        sc = pod["spec"].get("securityContext") or {}
        owner = (
            (int(sc["runAsUser"]), int(sc.get("runAsGroup", sc["runAsUser"]))) if "runAsUser" in sc else None
        )
        for v in pod["spec"].get("volumes") or ():
            d = root / v["name"]
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
                        t = src["serviceAccountToken"]
                        sa_name = pod["spec"].get("serviceAccountName") or "default"
                        sa = self.model.store.find("serviceaccounts", ns, sa_name)
                        if sa is not None:
                            aud = [t["audience"]] if t.get("audience") else None
                            token, _ = self.api.tokens.request(
                                sa, aud, t.get("expirationSeconds", 3607), bound=pod
                            )
                            _write(d / t["path"], token.encode())
                    else:
                        self._fill(d, pod, ns, src)
            else:
                self._fill(d, pod, ns, v)
        return out

    def _fill(self, d: Path, pod: dict, ns: str, src: dict) -> None:
        """The files of a configMap, secret or downwardAPI source: a volume's own, or one of a projected volume's
        sources (whose secret is ``name``, where a secret volume's is ``secretName``)."""
        if "configMap" in src:
            obj = self.model.store.find("configmaps", ns, src["configMap"]["name"]) or {}
            _write_items(d, obj.get("data") or {}, src["configMap"].get("items"), binary=False)
        elif "secret" in src:
            name = src["secret"].get("secretName") or src["secret"].get("name")
            obj = self.model.store.find("secrets", ns, name) or {}
            _write_items(d, obj.get("data") or {}, src["secret"].get("items"), binary=True)
        elif "downwardAPI" in src:
            for item in src["downwardAPI"].get("items") or ():
                if "fieldRef" in item:
                    _write(d / item["path"], _field(pod, item["fieldRef"]["fieldPath"]).encode())

    # --- processes ---------------------------------------------------------------------------------------
    def _spawn(self, run: _Pod, c: _Container) -> None:
        log = run.folder / "containers" / f"{c.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        kwargs: dict = {}
        if c.user is not None and os.geteuid() == 0:
            kwargs.update(user=c.user[0], group=c.user[1], extra_groups=[])
            for p in run.folder.rglob("*"):
                os.chown(p, c.user[0], c.user[1])
            os.chown(run.folder, c.user[0], c.user[1])
        elif c.user is not None:
            (run.folder / "user").write_text(f"{c.name} {c.user[0]}:{c.user[1]}\n")
        out = open(log, "ab")  # noqa: SIM115 (the process keeps it)

        def start(**user) -> subprocess.Popen:
            return subprocess.Popen(
                c.argv, env=c.env, cwd=c.cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, **user,
            )  # fmt: skip

        try:
            try:
                c.proc = start(**kwargs)
            except PermissionError:
                if not kwargs:
                    raise
                # this image's interpreter is out of that uid's reach (under /root, say): run as ours, and say so
                (run.folder / "user").write_text(
                    f"{c.name} {c.user[0]}:{c.user[1]} (ran as {os.geteuid()})\n"
                )
                c.proc = start()
        except OSError as e:
            out.write(f"{e}\n".encode())
            c.proc = None
            c.exit_code = 128
        finally:
            out.close()
        c.restart_at = None
        c.started_at = time.monotonic()

    def _watch(self) -> None:
        offsets: dict[tuple[str, str], int] = {}
        while not self._stop.wait(0.2):
            with self.model.lock:
                for uid, run in list(self._pods.items()):
                    if run.done:
                        continue
                    self._step(uid, run, offsets)

    def _step(self, uid: str, run: _Pod, offsets: dict) -> None:
        meta = run.pod["metadata"]
        now = time.monotonic()
        if not run.started and run.stopping_until is None:
            self._step_init(run, offsets, uid, now)
            if not run.started:
                return
        for c in run.containers:
            self._copy_log(run, c, offsets, uid)
            if c.proc is not None and c.exit_code is None:
                code = c.proc.poll()
                if code is None:
                    continue
                c.exit_code = (
                    128 - code if code < 0 else code
                )  # killed by signal n: 128+n, as the runtime reports
            if run.stopping_until is None and c.restart_at is None and c.exit_code is not None:
                again = c.restart == "Always" or (c.restart == "OnFailure" and c.exit_code != 0)
                if again:
                    c.restart_at = now + backoff_s(c.restarts, now - c.started_at)
                    self._set_waiting(run.pod, c)
            if c.restart_at is not None and now >= c.restart_at and run.stopping_until is None:
                c.restarts += 1
                c.exit_code = None
                self._spawn(run, c)
                self._set_restarts(run.pod, c)
        if run.stopping_until is not None:
            alive = [c for c in run.containers if c.proc is not None and c.proc.poll() is None]
            if alive and now >= run.stopping_until:
                for c in alive:
                    c.proc.kill()
                return
            if not alive:
                run.done = True
                self.model.delete_pod(meta["namespace"], meta["name"])
            return
        if all(c.exit_code is not None and c.restart_at is None for c in run.containers):
            run.done = True
            codes = [c.exit_code or 0 for c in run.containers]
            if self.model.store.find("pods", meta["namespace"], meta["name"]) is not run.pod:
                return
            if all(x == 0 for x in codes):
                self.model._finish(run.pod, "Succeeded", "Completed", "")
            else:
                self.model._finish(run.pod, "Failed", "Error", "", exit_code=next(x for x in codes if x))

    def _step_init(self, run: _Pod, offsets: dict, uid: str, now: float) -> None:
        meta = run.pod["metadata"]
        for i, c in enumerate(run.inits):
            if c.exit_code == 0 and c.proc is not None:
                continue
            self._copy_log(run, c, offsets, uid)
            if c.proc is None and c.exit_code is None:
                return  # not started yet (its turn comes)
            if c.exit_code is None:
                code = c.proc.poll() if c.proc is not None else 128
                if code is None:
                    return
                c.exit_code = 128 - code if code < 0 else code
                self._copy_log(run, c, offsets, uid)
            if c.exit_code != 0:
                if c.restart == "OnFailure":
                    c.restarts += 1
                    c.exit_code = None
                    self._spawn(run, c)
                    return
                run.done = True  # restartPolicy Never: an init container's failure fails the pod
                self._initializing(run)
                if self.model.store.find("pods", meta["namespace"], meta["name"]) is run.pod:
                    self.model._finish(run.pod, "Failed", "Error", "", exit_code=c.exit_code)
                    for s in run.pod["status"].get("initContainerStatuses") or ():
                        if s["name"] == c.name:
                            s["state"] = {"terminated": {"exitCode": c.exit_code, "reason": "Error",
                                                         "finishedAt": _now_iso()}}  # fmt: skip
                    self.model.store.modified("pods", run.pod)
                return
            if i + 1 < len(run.inits):
                self._spawn(run, run.inits[i + 1])
                self._initializing(run)
                return
        self._initialized(run)
        self._start_containers(run)

    def _copy_log(self, run: _Pod, c: _Container, offsets: dict, uid: str) -> None:
        path = run.folder / "containers" / f"{c.name}.log"
        key = (uid, c.name)
        if path.exists():
            data = path.read_bytes()[offsets.get(key, 0) :]
            if data:
                offsets[key] = offsets.get(key, 0) + len(data)
                meta = run.pod["metadata"]
                with contextlib.suppress(ValueError):  # the pod has terminated
                    self.api.logs.write(self.api, meta["namespace"], meta["name"], c.name,
                                        data.decode(errors="replace"))  # fmt: skip

    def _set_restarts(self, pod: dict, c: _Container) -> None:
        for s in pod["status"].get("containerStatuses") or ():
            if s.get("name") == c.name:
                s["restartCount"] = c.restarts
                if "waiting" in (s.get("state") or {}):
                    s.update(state={"running": {"startedAt": _now_iso()}}, ready=True, started=True)
        self.model.store.modified("pods", pod)

    def _set_waiting(self, pod: dict, c: _Container) -> None:
        """Between a crash and its restart, as the kubelet shows it: waiting in CrashLoopBackOff, the exit kept."""
        for s in pod["status"].get("containerStatuses") or ():
            if s.get("name") == c.name:
                s["lastState"] = {"terminated": {"exitCode": c.exit_code, "reason": "Completed" if c.exit_code == 0
                                                 else "Error", "finishedAt": _now_iso()}}  # fmt: skip
                s.update(ready=False, started=False, state={"waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off restarting failed container {c.name} in pod {pod['metadata']['name']}"}})  # fmt: skip
        self.model.store.modified("pods", pod)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
