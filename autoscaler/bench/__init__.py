"""Benchmarks that drive several parts together, above the parts they measure: the cluster model on a trace
(``model``); the live controller's and the Event writer's are on the real local stack (demos/live_sides.py,
demos/bench_events.py). The planner's own benchmark is ``autoscaler.core.bench``; ``autoscaler bench`` runs it."""
