"""The two schedulers' deployed configuration, rendered from the profiles in ``clusterspec/scheduler.py``.

- the control plane's kube-scheduler (kubeadm static pod, profile ``default-scheduler``) loads its
  KubeSchedulerConfiguration with ``--config`` through the kubeadm ClusterConfiguration (v1beta4)
  ``scheduler.extraArgs`` / ``extraVolumes``;
- the gang scheduler (``research-gang-scheduler``, the scheduler-plugins build of kube-scheduler with
  Coscheduling) runs as a Deployment from ``deploy/scheduler/*.yaml.j2`` (docs/scheduler.md).
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

from clusterspec.errors import UserError
from clusterspec.scheduler import (
    BIN_PACKING,
    DEFAULT_SCHEDULER,
    GANG_NAMESPACE,
    GANG_SCHEDULER,
    PERMIT_WAITING_TIME_S,
    POD_GROUP_BACKOFF_S,
    Profile,
)
from clusterspec.spec import Cluster
from provision import checkout

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "deploy" / "scheduler"
OUT = REPO / "build" / "scheduler"

CONFIG_API = "kubescheduler.config.k8s.io/v1"
KUBEADM_API = "kubeadm.k8s.io/v1beta4"

# Where the control plane keeps the file: a directory of its own, mounted read-only into the static pod.
CONFIG_DIR = "/etc/kubernetes/scheduler"
CONFIG_FILE = f"{CONFIG_DIR}/config.yaml"
KUBECONFIG = "/etc/kubernetes/scheduler.conf"  # kubeadm writes it for the static pod

# scheduler-plugins releases (README "Compatibility Matrix", kubernetes-sigs/scheduler-plugins): a release is
# built against one Kubernetes minor; the version-skew policy lets kube-scheduler be one minor older than the
# API server, never newer. So each minor maps to the release of its own minor, else the one before.
SCHEDULER_PLUGINS = {
    "1.31": "v0.31.8",
    "1.32": "v0.32.7",
    "1.33": "v0.33.5",
    "1.34": "v0.34.7",
    "1.35": "v0.34.7",
}
IMAGE = "registry.k8s.io/scheduler-plugins/kube-scheduler:{version}"
# Where the PodGroup CRD of a release comes from (provenance only): the file itself is kept in the repository,
# deploy/scheduler/crds/<version>/, taken from that tag, and applied from there (issue 26: no download at deploy
# time that nothing verifies).
PODGROUP_CRD = (
    "https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/{version}/manifests/crds/"
    "scheduling.x-k8s.io_podgroups.yaml"
)
PODGROUP_CRD_FILE = "crds/{version}/scheduling.x-k8s.io_podgroups.yaml"


def _fit_args(profile: Profile) -> dict:
    return {
        "scoringStrategy": {
            "type": profile.strategy,
            "resources": [{"name": r, "weight": w} for r, w in profile.resources],
        }
    }


def _profile(profile: Profile, scheduler_name: str, gangs: bool) -> dict:
    plugins: dict = {}
    if gangs:
        # scheduler-plugins pkg/coscheduling/README.md: Coscheduling at every extension point it implements,
        # and as the only queue sort (it keeps a group's pods together in the queue).
        plugins["multiPoint"] = {"enabled": [{"name": "Coscheduling"}]}
        plugins["queueSort"] = {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}
    if not profile.balanced:
        plugins["score"] = {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
    config = [{"name": "NodeResourcesFit", "args": _fit_args(profile)}]
    if gangs:
        config.append(
            {
                "name": "Coscheduling",
                "args": {
                    "permitWaitingTimeSeconds": PERMIT_WAITING_TIME_S,
                    "podGroupBackoffSeconds": POD_GROUP_BACKOFF_S,
                },
            }
        )
    out: dict = {"schedulerName": scheduler_name}
    if plugins:
        out["plugins"] = plugins
    out["pluginConfig"] = config
    return out


def control_plane_config(profile: Profile = BIN_PACKING) -> dict:
    """The KubeSchedulerConfiguration of the control plane's kube-scheduler (upstream image: no gangs)."""
    doc = {
        "apiVersion": CONFIG_API,
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": KUBECONFIG},
        "leaderElection": {"leaderElect": True},
    }
    if profile.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    doc["profiles"] = [_profile(profile, DEFAULT_SCHEDULER, gangs=False)]
    return doc


def gang_scheduler_config(profile: Profile = BIN_PACKING) -> dict:
    """The KubeSchedulerConfiguration of the gang scheduler (scheduler-plugins image, in-cluster credentials)."""
    doc = {
        "apiVersion": CONFIG_API,
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceNamespace": GANG_NAMESPACE,
            "resourceName": GANG_SCHEDULER,
        },
    }
    if profile.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    doc["profiles"] = [_profile(profile, GANG_SCHEDULER, gangs=profile.coscheduling)]
    return doc


def kubeadm_scheduler_patch() -> dict:
    """The kubeadm ClusterConfiguration (v1beta4) fields that make the static kube-scheduler load the file."""
    return {
        "apiVersion": KUBEADM_API,
        "kind": "ClusterConfiguration",
        "scheduler": {
            "extraArgs": [{"name": "config", "value": CONFIG_FILE}],
            "extraVolumes": [
                {
                    "name": "scheduler-config",
                    "hostPath": CONFIG_DIR,
                    "mountPath": CONFIG_DIR,
                    "readOnly": True,
                    "pathType": "DirectoryOrCreate",
                }
            ],
        },
    }


def control_plane_files() -> dict[str, str]:
    """What the control_plane Terraform module writes on every member (its ``scheduler_*`` variables): the
    KubeSchedulerConfiguration, its path, and the ``scheduler:`` block of kubeadm's ClusterConfiguration."""
    return {
        "config": dump([control_plane_config()]),
        "config_file": CONFIG_FILE,
        "kubeadm": yaml.safe_dump({"scheduler": kubeadm_scheduler_patch()["scheduler"]}, sort_keys=False),
    }


def plugins_version(cluster: Cluster) -> str:
    minor = cluster.kubernetes.minor
    try:
        return SCHEDULER_PLUGINS[minor]
    except KeyError:
        known = ", ".join(SCHEDULER_PLUGINS)
        raise UserError(
            f"cluster.yaml: kubernetes.version {cluster.kubernetes.version}: no scheduler-plugins release runs the "
            f"gang scheduler on Kubernetes {minor} (releases cover {known}); use one of those minors or add the "
            "release to provision/scheduler.py"
        ) from None


def render_manifests(cluster: Cluster, profile: Profile = BIN_PACKING) -> list[dict]:
    """The gang scheduler's manifests (deploy/scheduler/*.yaml.j2), in apply order. The PodGroup CRD is applied
    first, from the release's file kept in the repository (:func:`podgroup_crd`)."""
    version = plugins_version(cluster)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(checkout.require(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    values = {
        "name": GANG_SCHEDULER,
        "namespace": GANG_NAMESPACE,
        "image": IMAGE.format(version=version),
        "part_of": cluster.name,
        "config": yaml.safe_dump(gang_scheduler_config(profile), sort_keys=False),
    }
    docs: list[dict] = []
    for name in ("namespace", "rbac", "config", "deployment"):
        text = env.get_template(f"{name}.yaml.j2").render(**values)
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    from provision import images

    return images.pin_docs(docs, cluster)


def podgroup_crd_url(cluster: Cluster) -> str:
    """Where the release publishes the CRD (recorded in the kept file's header)."""
    return PODGROUP_CRD.format(version=plugins_version(cluster))


def podgroup_crd(cluster: Cluster) -> Path:
    """The release's PodGroup CRD as kept in the repository (deploy/scheduler/crds/<version>/)."""
    path = checkout.require(TEMPLATES) / PODGROUP_CRD_FILE.format(version=plugins_version(cluster))
    if not path.exists():
        raise UserError(f"{path}: missing: keep scheduler-plugins {plugins_version(cluster)}'s PodGroup CRD there "
                        f"(from {podgroup_crd_url(cluster)})")  # fmt: skip
    return path


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    str,
    lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None),
)


def dump(docs: list[dict]) -> str:
    return "---\n".join(yaml.dump(d, Dumper=_Dumper, sort_keys=False) for d in docs)


def write(cluster: Cluster, out: Path = OUT) -> dict[str, Path]:
    """Render everything into ``out``: the control plane's scheduler config and kubeadm patch (for the
    control_plane Terraform module), the gang scheduler's manifests and the PodGroup CRD (the release's, kept in the repository)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "kube-scheduler-config.yaml": dump([control_plane_config()]),
        "kubeadm-scheduler.yaml": dump([kubeadm_scheduler_patch()]),
        "gang-scheduler.yaml": dump(render_manifests(cluster)),
        "podgroup-crd.yaml": podgroup_crd(cluster).read_text(),
    }
    paths = {}
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        paths[name] = path
    return paths
