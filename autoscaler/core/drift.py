"""Drift: nodes launched from an older launch template version or image than their group's (docs/planner.md,
"Drift").

A new image (``invoke bake-ami``, then ``invoke up``) or any change of a group's launch template makes a new
version; Auto Scaling launches new instances from it, and the instances already running stay on the old one.
Karpenter calls such nodes drifted (kubernetes-sigs/karpenter, designs/drift.md, "static drift": a node whose
values differ from its NodePool's and NodeClass's; karpenter-provider-aws compares the instance's AMI with the
NodeClass's) and replaces them, draining their pods. The autoscaler never evicts a job, so here a drifted node is
replaced only once it is empty:

- an empty drifted node is removable at once (no idle threshold), through the usual two steps (taint, then
  terminate on a fresh re-check); group minimum and warm pool do not keep it: at the minimum the group's desired
  capacity is raised in the same plan, so a new node on the new version takes its place;
- a busy drifted node keeps its jobs and gets a ``PreferNoSchedule`` taint, so the scheduler places new pods on
  nodes of the current version whenever they fit there, and the node empties as its jobs end;
- past the deadline (``drift_deadline_s``, cluster.yaml ``operations.drift_deadline_h``) counted from when a plan
  first saw the node drifted (its ``research.cluster/drifted-since`` annotation), every pod still holding it gets
  an Event saying so, and the plan's ``drift`` lists the node as overdue (metric ``autoscaler_drift_overdue_nodes``,
  alert ``NodeDriftOverdue``): the operator decides; nothing is drained.
"""

from __future__ import annotations

from autoscaler.core.model import LaunchTemplate, Snapshot


def reason(have: LaunchTemplate | None, want: LaunchTemplate | None) -> str | None:
    """Why an instance launched from ``have`` is drifted from its group's ``want``, or None. Only what both
    sides report is compared: an instance whose version is unknown is judged by its image alone."""
    if have is None or want is None:
        return None
    if want.version and have.version and have.version != want.version:
        return f"launched from launch template version {have.version}; the group's is {want.version}"
    if want.image and have.image and have.image != want.image:
        return f"runs image {have.image}; the group's launch template has {want.image}"
    return None


def drifted(snap: Snapshot) -> dict[str, tuple[str, str]]:
    """Node name -> (reason, the group's version or image) for every drifted node of the snapshot."""
    groups = [g for g in snap.groups if g.template is not None]
    if not groups:
        return {}
    by_id = {i.id: (i, g) for g in groups for i in g.instances if i.template is not None}
    out: dict[str, tuple[str, str]] = {}
    for n in snap.nodes:
        hit = by_id.get(n.instance_id) if n.instance_id else None
        if hit is None:
            continue
        inst, g = hit
        why = reason(inst.template, g.template)
        if why:
            out[n.name] = (why, g.template.version or g.template.image or "")
    return out
