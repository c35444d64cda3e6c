"""The kube-scheduler profile the autoscaler is designed for: one source for the deployed configuration and for
the simulator's scheduler (``autoscaler/model/scheduler.py`` reads :data:`PROFILES` from here).

Two schedulers run in the cluster (docs/scheduler.md):

- the control plane's kube-scheduler (kubeadm static pod, profile ``default-scheduler``): NodeResourcesFit with
  the ``MostAllocated`` scoring strategy, ``nvidia.com/gpu`` weighted above CPU and memory, and
  NodeResourcesBalancedAllocation off (it spreads CPU and memory shares, against packing). It is loaded with
  ``--config`` through the kubeadm ClusterConfiguration (v1beta4) ``scheduler.extraArgs`` / ``extraVolumes``.
- a second scheduler, the scheduler-plugins build of kube-scheduler (``research-gang-scheduler``), for pods of a
  declared gang (label ``scheduling.x-k8s.io/pod-group``, a PodGroup with ``minMember``): the same scoring plus
  the Coscheduling plugin, which binds a group only when all ``minMember`` pods have a place (Permit).

``DEFAULT`` is the upstream kube-scheduler's own scoring (NodeResourcesFit ``LeastAllocated`` on CPU and memory
plus NodeResourcesBalancedAllocation, no gangs): the simulator's ``--scheduler default``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from provision import checkout
from provision.errors import UserError
from provision.spec import Cluster

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "deploy" / "scheduler"
OUT = REPO / "build" / "scheduler"

GPU = "nvidia.com/gpu"
CONFIG_API = "kubescheduler.config.k8s.io/v1"
KUBEADM_API = "kubeadm.k8s.io/v1beta4"
DEFAULT_SCHEDULER = "default-scheduler"
GANG_SCHEDULER = "research-gang-scheduler"
GANG_NAMESPACE = "scheduler-plugins"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_GROUP_API = "scheduling.x-k8s.io/v1alpha1"

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
PODGROUP_CRD = (
    "https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/{version}/manifests/crds/"
    "scheduling.x-k8s.io_podgroups.yaml"
)
# Coscheduling waits this long at Permit for the rest of a group before giving its room back, then keeps the
# group out of the queue for the back-off (scheduler-plugins apis/config/v1 CoschedulingArgs; defaults 60 s / 0).
PERMIT_WAITING_TIME_S = 60
POD_GROUP_BACKOFF_S = 10


@dataclass(frozen=True)
class Profile:
    """How a scheduler profile scores nodes and whether it places gangs whole.

    ``strategy`` and ``resources`` are NodeResourcesFit's ``scoringStrategy``; ``balanced`` lists the
    resources of NodeResourcesBalancedAllocation (empty: the plugin is disabled); ``plugin_weights`` the score
    plugins' weights as the framework multiplies them; ``percentage_of_nodes_to_score`` None means the
    scheduler's adaptive default."""

    name: str
    strategy: str
    resources: tuple[tuple[str, int], ...]
    balanced: tuple[str, ...]
    coscheduling: bool
    percentage_of_nodes_to_score: int | None
    plugin_weights: tuple[tuple[str, int], ...]

    @property
    def score_plugins(self) -> frozenset[str]:
        """The score plugins that can tell two nodes apart for the simulated pods (the others score every node
        alike for them: no affinity, no spread constraint, no PreferNoSchedule taint; see docs/simulator.md)."""
        names = {"NodeResourcesFit"}
        if self.balanced:
            names.add("NodeResourcesBalancedAllocation")
        return frozenset(names)

    def weight(self, plugin: str) -> int:
        return dict(self.plugin_weights)[plugin]


# The upstream defaults (pkg/scheduler/apis/config/v1/default_plugins.go and defaults.go): NodeResourcesFit and
# NodeResourcesBalancedAllocation weight 1 each, LeastAllocated on cpu and memory (weight 1 each),
# BalancedAllocation over cpu and memory, percentageOfNodesToScore adaptive.
DEFAULT = Profile(
    name="default",
    strategy="LeastAllocated",
    resources=(("cpu", 1), ("memory", 1)),
    balanced=("cpu", "memory"),
    coscheduling=False,
    percentage_of_nodes_to_score=None,
    plugin_weights=(("NodeResourcesFit", 1), ("NodeResourcesBalancedAllocation", 1)),
)

# Ours: pack GPUs first. A node's GPU share counts five times its CPU or memory share, so a pod goes to the node
# whose GPUs are most used (and a CPU-only pod, whose GPU term is 0 everywhere, to the fullest node by CPU and
# memory); every feasible node is scored (a packing decision made on a sample of nodes is not packing).
BIN_PACKING = Profile(
    name="bin-packing",
    strategy="MostAllocated",
    resources=((GPU, 5), ("cpu", 1), ("memory", 1)),
    balanced=(),
    coscheduling=True,
    percentage_of_nodes_to_score=100,
    plugin_weights=(("NodeResourcesFit", 1),),
)

PROFILES = {"bin-packing": BIN_PACKING, "default": DEFAULT}


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
    from its release (:func:`podgroup_crd_url`) first."""
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
    return docs


def podgroup_crd_url(cluster: Cluster) -> str:
    return PODGROUP_CRD.format(version=plugins_version(cluster))


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
    control_plane Terraform module), the gang scheduler's manifests and the PodGroup CRD's address."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "kube-scheduler-config.yaml": dump([control_plane_config()]),
        "kubeadm-scheduler.yaml": dump([kubeadm_scheduler_patch()]),
        "gang-scheduler.yaml": dump(render_manifests(cluster)),
        "podgroup-crd.url": podgroup_crd_url(cluster) + "\n",
    }
    paths = {}
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        paths[name] = path
    return paths
