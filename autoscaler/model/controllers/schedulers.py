"""Second schedulers as their pods run them: a pod of the scheduler-plugins build of kube-scheduler
(``registry.k8s.io/scheduler-plugins/kube-scheduler``) that is Running reads its KubeSchedulerConfiguration from
the file ``--config`` names, in the ConfigMap volume mounted there, and serves each profile's ``schedulerName``
(Coscheduling when the profile enables it); when none of its pods runs, pods naming it are left Pending, as they are
on a cluster where that scheduler is not deployed or has crashed. Only in effect when ``model.deployed_schedulers``
is set (an API server serving the model, where the manifests are applied); the simulator's model runs the gang scheduler throughout."""

from __future__ import annotations

import yaml

from autoscaler.model.controllers import Controller
from autoscaler.model.controllers.common import is_deleting

IMAGE = "registry.k8s.io/scheduler-plugins/kube-scheduler"  # or the lab's ECR mirror of it (issue 36)


def _config_path(container: dict) -> str | None:
    args = [*(container.get("command") or ()), *(container.get("args") or ())]
    for i, a in enumerate(args):
        if a.startswith("--config="):
            return a.split("=", 1)[1]
        if a == "--config" and i + 1 < len(args):
            return args[i + 1]
    return None


def profiles(config: dict) -> dict[str, bool]:
    """schedulerName -> Coscheduling enabled, for each profile of a KubeSchedulerConfiguration."""
    out = {}
    for p in config.get("profiles") or ():
        plugins = p.get("plugins") or {}
        enabled = [e.get("name") for point in plugins.values() if isinstance(point, dict)
                   for e in point.get("enabled") or ()]  # fmt: skip
        out[p.get("schedulerName", "default-scheduler")] = "Coscheduling" in enabled
    return out


class DeployedSchedulers(Controller):
    kinds = ("pods",)

    def __init__(self, model) -> None:
        super().__init__(model)
        self.running: dict[str, dict[str, bool]] = {}  # pod uid -> its profiles

    def on_change(self, kind: str, event_type: str, obj: dict) -> None:
        if not self.model.deployed_schedulers:
            return
        if any(
            IMAGE.split("/", 1)[1] in (c.get("image") or "")
            for c in (obj.get("spec") or {}).get("containers") or ()
        ):
            self.dirty.add(
                (
                    event_type,
                    obj["metadata"].get("namespace", ""),
                    obj["metadata"]["name"],
                    obj["metadata"]["uid"],
                )
            )

    def sync(self) -> None:
        work, self.dirty = self.dirty, set()
        for event_type, ns, name, uid in sorted(work):
            pod = self.store.find("pods", ns, name)
            live = (event_type != "DELETED" and pod is not None and pod["metadata"]["uid"] == uid
                    and (pod.get("status") or {}).get("phase") == "Running" and not is_deleting(pod))  # fmt: skip
            if live:
                self.running[uid] = self._profiles(pod)
            else:
                self.running.pop(uid, None)
        served: dict[str, bool] = {}
        for p in self.running.values():
            served.update(p)
        sched = self.model.scheduler
        for name in [n for n in sched.schedulers if n != "default-scheduler"]:
            if name not in served:
                sched.set_scheduler(name, False)
        for name, cos in served.items():
            if name != "default-scheduler":
                sched.set_scheduler(name, True, cos)

    def _profiles(self, pod: dict) -> dict[str, bool]:
        spec = pod.get("spec") or {}
        for c in spec.get("containers") or ():
            path = _config_path(c)
            if not path:
                continue
            for m in c.get("volumeMounts") or ():
                mount = m.get("mountPath", "").rstrip("/")
                if not path.startswith(mount + "/"):
                    continue
                vol = next((v for v in spec.get("volumes") or () if v.get("name") == m.get("name")), {})
                cm_name = (vol.get("configMap") or {}).get("name")
                cm = self.store.find("configmaps", pod["metadata"]["namespace"], cm_name or "")
                key = path[len(mount) + 1 :]
                text = ((cm or {}).get("data") or {}).get(key)
                if text:
                    try:
                        return profiles(yaml.safe_load(text) or {})
                    except yaml.YAMLError:
                        return {}
        return {}
