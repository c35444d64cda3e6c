"""Karpenter (v1.15, AWS provider) as the lab would run it, over the same groups: one NodePool per group.

It shares cluster-autoscaler's model of the cluster and the cloud (``ca_like.CaInstance``: first-fit decreasing
over node-shaped bins, the group cache, giving up on capacity that fails) and differs where Karpenter does
(checked against Karpenter itself on the local stack: ``invoke bench-peers``, docs/bench-peers.md):

- **Batches, no GPU wait.** It provisions once no new pending pod came for 1 s (``BATCH_IDLE_DURATION``), GPU
  pods too (no 30-s buffer).
- **Every pool in one pass.** The pods no room covers are packed pool after pool (weight order: the groups'
  priorities, regions in spill-over order), all in one pass, not one group per loop.
- **Its own state, read live.** NodeClaims are its own objects: no minute-old group cache.
- **Capacity errors at once, cached 3 minutes.** CreateFleet answers InsufficientInstanceCapacity
  synchronously; the offering is then unavailable for 3 minutes (the AWS provider's ICE cache), after which it is
  tried again: a fixed back-off, never doubled.
- **Consolidation.** ``WhenEmptyOrUnderutilized`` after ``consolidateAfter`` (30 s as the benchmark runs it): an
  empty node goes, and a node whose pods fit elsewhere is drained; a disruption budget of 100%.
- **Training pods protected.** Its best users annotate them ``karpenter.sh/do-not-disrupt: "true"`` (an evicted
  training pod restarts from scratch), so consolidation removes only nodes without them: modelled by the
  annotation cluster-autoscaler's drain rules read the same way.
- **Nominated nodes stay.** Its provisioner nominates the nodes (and in-flight NodeClaims) it expects pending pods
  to land on, and disruption leaves a nominated node alone (cluster state's nomination, renewed every
  provisioning loop): a node a pending pod fits is never consolidated as empty. Without it, a gang's nodes
  were given back while its pods waited for their last member, and bought again, for ever (the simulator's
  test trace: the 16-GPU gang never ran; against the real Karpenter, the 16 x 8 gang ran in 4.2 s).
- It knows no gangs.

``karpenter-primary``: one Karpenter, the primary region's cluster (as real deployments run it);
``karpenter-ideal``: one over all regions' zones, which no deployment can be (an idealised bound).
"""

from __future__ import annotations

from simulator.policies.base import PolicyContext
from simulator.policies.binpack import Bins, decreasing, take
from simulator.policies.ca_like import SAFE_TO_EVICT, CaInstance, CaPolicy, CaSettings
from simulator.policies.view import allocatable, is_daemonset_pod, requests

CONSOLIDATE_AFTER_S = 30.0
ICE_CACHE_S = 180.0  # karpenter-provider-aws UnavailableOfferingsTTL

KARPENTER = CaSettings(
    max_node_provision_s=900.0,  # a NodeClaim not registered in 15 min is deleted (registration TTL)
    backoff_s=ICE_CACHE_S,
    max_backoff_s=ICE_CACHE_S,
    unneeded_s=CONSOLIDATE_AFTER_S,
    utilization=1.01,  # WhenEmptyOrUnderutilized: any node whose pods fit elsewhere is a candidate
    delay_after_add_s=0.0,
    max_empty_bulk_delete=10_000,  # budget: 100% of nodes
    grace_s=0.0,
    refresh_s=0.0,
    new_pod_s=1.0,
    new_gpu_pod_s=1.0,
    per_node_corrections=False,
    max_node_startup_s=900.0,
    gpu_label=True,
)


class KarpenterInstance(CaInstance):
    def _scale_up(self, now, view):
        """Every pool in one pass: the CA step (one group) repeated until no pool takes the rest."""
        result = None
        for _ in range(len(view.by_name) + 1):
            step = super()._scale_up(now, view)
            if step != "scaled":
                return result or step
            result = "scaled"
        return result

    def _unneeded(self, now, view):
        """The consolidation candidates, less the nodes pending pods are nominated to (first fit, as placed) and
        the nodes not initialized yet: Karpenter disrupts only a NodeClaim whose node is Initialized (Ready, its
        startup taints gone and the extended resources it was launched for, here the GPUs, registered). Without
        that, a GPU node empty in the seconds between Ready and its device plugin was consolidated, and bought
        again for the same pods every boot (116 nodes bought on the 320-GPU sweep, against the real 40)."""
        kept = self._nominated(view)
        kept |= {n["metadata"]["name"] for n in view.nodes if self._readiness(view, n) != "ready"}
        for name in kept:
            self.unneeded_since.pop(name, None)
        return [(n, pods) for n, pods in super()._unneeded(now, view) if n["metadata"]["name"] not in kept]

    def _nominated(self, view) -> set[str]:
        pending = [p for p in view.pending() if not is_daemonset_pod(p)]
        if not pending:
            return set()
        bins = Bins()
        for node in view.nodes:
            free = allocatable(node)
            for p in view.pods_on[node["metadata"]["name"]]:
                take(requests(p), free)
            bins.add(node, free)
        out = set()
        for pod in decreasing(pending):
            i = bins.place(pod)
            if i is not None:
                out.add(bins.nodes[i]["metadata"]["name"])
        return out


class KarpenterPolicy(CaPolicy):
    api_mode = "cluster-autoscaler"
    deployment = "ideal"
    name = "karpenter-ideal"
    pod_annotations = {SAFE_TO_EVICT: "false"}  # karpenter.sh/do-not-disrupt: "true", read the same way

    def __init__(self, ctx: PolicyContext, settings: CaSettings | None = None):
        super().__init__(ctx, settings or KARPENTER)
        regions = tuple(ctx.spec.spill_over_order)
        s = settings or KARPENTER
        self.instances = [KarpenterInstance(ctx, s, regions[:1] if self.deployment == "primary" else None)]


class KarpenterIdealPolicy(KarpenterPolicy):
    """One Karpenter over every region's zones: no real deployment (an idealised bound)."""


class KarpenterPrimaryPolicy(KarpenterPolicy):
    """One Karpenter in the primary region's cluster."""

    deployment = "primary"
    name = "karpenter-primary"
