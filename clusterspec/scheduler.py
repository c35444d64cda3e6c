"""The kube-scheduler profiles the autoscaler is designed for, and the two schedulers' names: one source for the
deployed configuration (``provision/scheduler.py`` renders it) and for the cluster model's scheduler
(``simulator/model/scheduler.py``).

Two schedulers run in the cluster (docs/scheduler.md):

- the control plane's kube-scheduler (kubeadm static pod, profile ``default-scheduler``): NodeResourcesFit with
  the ``MostAllocated`` scoring strategy, ``nvidia.com/gpu`` weighted above CPU and memory, and
  NodeResourcesBalancedAllocation off (it spreads CPU and memory shares, against packing).
- a second scheduler, the scheduler-plugins build of kube-scheduler (``research-gang-scheduler``), for pods of a
  declared gang (label ``scheduling.x-k8s.io/pod-group``, a PodGroup with ``minMember``): the same scoring plus
  the Coscheduling plugin, which binds a group only when all ``minMember`` pods have a place (Permit).

``DEFAULT`` is the upstream kube-scheduler's own scoring (NodeResourcesFit ``LeastAllocated`` on CPU and memory
plus NodeResourcesBalancedAllocation, no gangs): the simulator's ``--scheduler default``.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterspec.names import GPU_RESOURCE as GPU

DEFAULT_SCHEDULER = "default-scheduler"
GANG_SCHEDULER = "research-gang-scheduler"
GANG_NAMESPACE = "scheduler-plugins"
POD_GROUP_API = "scheduling.x-k8s.io/v1alpha1"
# Coscheduling waits this long at Permit for the rest of a group before giving its room back (scheduler-plugins
# apis/config/v1 CoschedulingArgs; default 60 s). No back-off after a failed group (the default, 0): the real gang
# scheduler showed (issue 33) that with one, a gang whose last try fell within the back-off of the last node's
# registration is left in the unschedulable queue, which only a Pod or PodGroup event or the 5-minute flush
# (podMaxInUnschedulablePodsDuration) brings back: the gang waits minutes beside free nodes.
PERMIT_WAITING_TIME_S = 60
POD_GROUP_BACKOFF_S = 0


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
