"""The autoscaler's pure decision core: a snapshot of the cluster in, a plan out, no I/O.

``snapshot.parse_snapshot`` checks and parses the documented snapshot format (docs/snapshot.md),
``planner.plan`` turns it into a :class:`~autoscaler.core.result.Plan` (docs/planner.md), and
``fit.pod_fits_node`` exposes the planner's scheduling predicate for the simulator's scheduler.
"""
